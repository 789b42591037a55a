/* Caravan jextract input for libcryptsetup (Debian: libcryptsetup-dev). */
#include <libcryptsetup.h>
