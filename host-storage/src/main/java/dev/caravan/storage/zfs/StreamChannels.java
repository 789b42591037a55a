package dev.caravan.storage.zfs;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * Channels over a caller's streams, in chunks of {@value #CHUNK} bytes. Unlike {@link
 * java.nio.channels.Channels#newChannel}, closing one (or interrupting its thread) never closes the
 * stream: the stream is the caller's, who may go on using it after a send or a receive.
 */
final class StreamChannels {
  static final int CHUNK = 256 * 1024;

  private StreamChannels() {}

  static WritableByteChannel writingTo(OutputStream out) {
    byte[] chunk = new byte[CHUNK];
    return new Open() {
      @Override
      public int write(ByteBuffer source) throws IOException {
        int length = Math.min(source.remaining(), chunk.length);
        source.get(chunk, 0, length);
        out.write(chunk, 0, length);
        return length;
      }
    };
  }

  static ReadableByteChannel readingFrom(InputStream in) {
    byte[] chunk = new byte[CHUNK];
    return new Open() {
      @Override
      public int read(ByteBuffer target) throws IOException {
        int read = in.read(chunk, 0, Math.min(chunk.length, target.remaining()));
        if (read > 0) {
          target.put(chunk, 0, read);
        }
        return read;
      }
    };
  }

  /** Open until closed; reads and writes fail unless a subclass gives them. */
  private abstract static class Open implements ReadableByteChannel, WritableByteChannel {
    private boolean open = true;

    @Override
    public int read(ByteBuffer target) throws IOException {
      throw new UnsupportedOperationException("a channel for writing");
    }

    @Override
    public int write(ByteBuffer source) throws IOException {
      throw new UnsupportedOperationException("a channel for reading");
    }

    @Override
    public boolean isOpen() {
      return open;
    }

    @Override
    public void close() {
      open = false;
    }
  }
}
