package dev.caravan.csi.peer;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/** An output that fails after {@code limit} bytes: the stream cut mid-send. */
final class CutAfter extends FilterOutputStream {
  private long left;

  CutAfter(OutputStream out, long limit) {
    super(out);
    this.left = limit;
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (len > left) {
      out.write(b, off, (int) left);
      left = 0;
      throw new IOException("cut by the test");
    }
    left -= len;
    out.write(b, off, len);
  }
}
