package dev.caravan.storage.internal.sys;

/**
 * Linux x86_64 errno numbers and their names. The names are what {@link
 * dev.caravan.storage.SyscallException#errnoName()} reports, so callers match on {@code "EBUSY"}
 * rather than on a number that differs between architectures.
 */
public final class Errno {
  public static final int ENOENT = 2;
  public static final int EPERM = 1;
  public static final int EINTR = 4;
  public static final int EIO = 5;
  public static final int ENXIO = 6;
  public static final int EBADF = 9;
  public static final int EAGAIN = 11;
  public static final int EBUSY = 16;
  public static final int EEXIST = 17;
  public static final int ENODEV = 19;
  public static final int EXDEV = 18;
  public static final int ENOTDIR = 20;
  public static final int EINVAL = 22;
  public static final int ENOSYS = 38;
  public static final int ENOTEMPTY = 39;
  public static final int ELOOP = 40;
  public static final int EOPNOTSUPP = 95;

  // Index = errno; "-" marks numbers Linux does not use (41 and 58 alias EAGAIN and EDEADLK).
  private static final String[] NAMES =
      """
       - EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT
       ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG
       ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY
       ELOOP - ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR
       EXFULL ENOANO EBADRQC EBADSLT - EBFONT ENOSTR ENODATA ETIME ENOSR ENONET ENOPKG EREMOTE
       ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ EBADFD EREMCHG
       ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK
       EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP
       EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET
       ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT
       ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL
       EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED
       EKEYREJECTED EOWNERDEAD ENOTRECOVERABLE ERFKILL EHWPOISON
      """
          .strip()
          .split("\\s+", -1);

  private Errno() {}

  /** {@code "EBUSY"} for 16; {@code "errno 4242"} for numbers this table does not know. */
  public static String name(int errno) {
    if (errno > 0 && errno < NAMES.length && !NAMES[errno].equals("-")) {
      return NAMES[errno];
    }
    return "errno " + errno;
  }
}
