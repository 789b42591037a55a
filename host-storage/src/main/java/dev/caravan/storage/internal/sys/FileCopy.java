package dev.caravan.storage.internal.sys;

import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/** Copies a byte range between two open files, in the kernel where it can. */
public final class FileCopy {
  private static final long BUFFER_SIZE = 1 << 20;
  // copy_file_range refuses some pairs of files (across filesystems of different types, on
  // filesystems that do not implement it); the data still has to be copied.
  private static final Set<Integer> NOT_HERE =
      Set.of(Errno.EXDEV, Errno.EOPNOTSUPP, Errno.EINVAL, Errno.ENOSYS);

  private FileCopy() {}

  /** Copies {@code length} bytes at {@code offset} in {@code in} to that offset in {@code out}. */
  public static void range(Fd in, Fd out, long offset, long length) {
    for (long done = 0; done < length; ) {
      long copied;
      try {
        copied = Libc.copyFileRange(in, out, offset + done, length - done);
      } catch (SyscallException e) {
        if (!NOT_HERE.contains(e.errno())) {
          throw e;
        }
        readWrite(in, out, offset + done, length - done);
        return;
      }
      if (copied == 0) {
        return; // the source ended early: it shrank while we copied
      }
      done += copied;
    }
  }

  private static void readWrite(Fd in, Fd out, long offset, long length) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buffer = arena.allocate(BUFFER_SIZE);
      for (long done = 0; done < length; ) {
        MemorySegment chunk = buffer.asSlice(0, Math.min(BUFFER_SIZE, length - done));
        long read = Libc.pread(in, chunk, offset + done);
        if (read == 0) {
          return;
        }
        Libc.pwriteFully(out, buffer.asSlice(0, read), offset + done);
        done += read;
      }
    }
  }
}
