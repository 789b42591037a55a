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

  @Override
  public String toString() {
    return name;
  }
}
