package dev.caravan.csi.backend;

/** Where a new volume's initial content comes from. */
public record ContentSource(Kind kind, String id) {
  public enum Kind {
    SNAPSHOT,
    VOLUME
  }

  public static ContentSource snapshot(String id) {
    return new ContentSource(Kind.SNAPSHOT, id);
  }

  public static ContentSource volume(String id) {
    return new ContentSource(Kind.VOLUME, id);
  }
}
