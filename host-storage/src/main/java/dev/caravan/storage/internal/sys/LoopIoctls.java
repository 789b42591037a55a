package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.bindings.linux.loop_config;
import dev.caravan.bindings.linux.loop_info64;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/** The loop driver's ioctls and their structs ({@code linux/loop.h}). */
public final class LoopIoctls {
  /** What {@code LOOP_GET_STATUS64} says about a bound loop device. */
  public record Status(long backingDev, long backingInode, int flags) {
    public boolean readOnly() {
      return (flags & LinuxUapi.LO_FLAGS_READ_ONLY()) != 0;
    }
  }

  private LoopIoctls() {}

  /** {@code LOOP_CTL_GET_FREE}: the number of a free loop device, created if there is none. */
  public static int getFree(Fd loopControl) {
    return (int) Libc.ioctl(loopControl, Ioctl.LOOP_CTL_GET_FREE, 0);
  }

  /**
   * {@code LOOP_CONFIGURE}: binds {@code backing} to the loop device in one step (unlike the old
   * SET_FD + SET_STATUS64 pair, there is no window where the device is bound but not set up).
   * {@code fileName} is informational only (what {@code losetup -l} shows), cut to fit.
   */
  public static void configure(Fd loop, Fd backing, boolean readOnly, String fileName) {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment config = buffers.allocate("loop_config", loop_config.layout()); // zeroed
      loop_config.fd(config, backing.number());
      MemorySegment info = loop_config.info(config);
      loop_info64.lo_flags(info, readOnly ? LinuxUapi.LO_FLAGS_READ_ONLY() : 0);
      byte[] name = fileName.getBytes(StandardCharsets.UTF_8);
      MemorySegment.copy(
          name,
          0,
          loop_info64.lo_file_name(info),
          JAVA_BYTE,
          0,
          Math.min(name.length, LinuxUapi.LO_NAME_SIZE() - 1));
      buffers.ioctl(loop, Ioctl.LOOP_CONFIGURE, config);
    }
  }

  /** {@code LOOP_GET_STATUS64}; fails with ENXIO when the device is not bound. */
  public static Status status(Fd loop) {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment info = buffers.allocate("loop_info64", loop_info64.layout());
      buffers.ioctl(loop, Ioctl.LOOP_GET_STATUS64, info);
      return new Status(
          loop_info64.lo_device(info), loop_info64.lo_inode(info), loop_info64.lo_flags(info));
    }
  }
}
