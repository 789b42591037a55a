package dev.caravan.storage.iscsi;

/** What {@link Iscsi#login} did. */
public enum LoginOutcome {
  /** This call logged in. */
  LOGGED_IN,
  /** A session to that target through that portal already existed; nothing was changed. */
  ALREADY_LOGGED_IN
}
