package dev.caravan.storage.internal.sys;

import dev.caravan.bindings.linux.LinuxUapi;

/** An ioctl request code with the name it is reported under when it fails. */
public record Ioctl(String name, long request) {
  public static final Ioctl LOOP_CTL_GET_FREE =
      new Ioctl("LOOP_CTL_GET_FREE", LinuxUapi.LOOP_CTL_GET_FREE());
  public static final Ioctl LOOP_CONFIGURE =
      new Ioctl("LOOP_CONFIGURE", LinuxUapi.LOOP_CONFIGURE());
  public static final Ioctl LOOP_GET_STATUS64 =
      new Ioctl("LOOP_GET_STATUS64", LinuxUapi.LOOP_GET_STATUS64());
  public static final Ioctl LOOP_SET_CAPACITY =
      new Ioctl("LOOP_SET_CAPACITY", LinuxUapi.LOOP_SET_CAPACITY());
  public static final Ioctl LOOP_CLR_FD = new Ioctl("LOOP_CLR_FD", LinuxUapi.LOOP_CLR_FD());
  public static final Ioctl BLKGETSIZE64 = new Ioctl("BLKGETSIZE64", LinuxUapi.BLKGETSIZE64());
  public static final Ioctl FIFREEZE = new Ioctl("FIFREEZE", LinuxUapi.FIFREEZE());
  public static final Ioctl FITHAW = new Ioctl("FITHAW", LinuxUapi.FITHAW());
  public static final Ioctl FICLONE = new Ioctl("FICLONE", LinuxUapi.FICLONE());
  // Terminal ioctls (asm-generic/ioctls.h; x86_64 uses the generic numbers). The generated
  // bindings do not cover them.
  public static final Ioctl TCGETS = new Ioctl("TCGETS", 0x5401);
  public static final Ioctl TCSETS = new Ioctl("TCSETS", 0x5402);
  // _IOW('T', 0x31, int) and _IO('T', 0x41)
  public static final Ioctl TIOCSPTLCK = new Ioctl("TIOCSPTLCK", 0x40045431);
  public static final Ioctl TIOCGPTPEER = new Ioctl("TIOCGPTPEER", 0x5441);

  @Override
  public String toString() {
    return name;
  }
}
