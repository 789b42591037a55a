package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;

/**
 * The appliance's result codes as CSI statuses. The message keeps the appliance's code (and its words,
 * when it gave any) next to what Caravan was doing, so an operator can look it up.
 */
final class QnapErrors {
  private QnapErrors() {}

  static final int NOT_FOUND = -6;
  static final int STILL_MAPPED = -14;
  static final int DATASET_BUSY = -205041;
  static final int SNAPSHOT_GONE = -206021;
  static final int LUN_GONE = -200005;

  static CsiException of(String operation, long code, String words) {
    String meaning = meaning(code);
    String message = "QNAP " + operation + " failed: result " + code + (meaning.isEmpty() ? "" : " (" + meaning + ")")
        + (words.isBlank() ? "" : ": " + words.strip());
    return new CsiException(kind(code), message);
  }

  static Kind kind(long code) {
    return switch ((int) code) {
      case -6, -12, -29, LUN_GONE, SNAPSHOT_GONE -> Kind.NOT_FOUND;
      case -13 -> Kind.INVALID_ARGUMENT;
      case -17, -22 -> Kind.ALREADY_EXISTS;
      case STILL_MAPPED, -34, -618, -619 -> Kind.FAILED_PRECONDITION;
      case DATASET_BUSY -> Kind.UNAVAILABLE;
      case -10 -> Kind.RESOURCE_EXHAUSTED;
      default -> Kind.INTERNAL;
    };
  }

  static String meaning(long code) {
    return switch ((int) code) {
      case -1 -> "generic failure";
      case -3, -4, -5 -> "open, read or write failure on the appliance";
      case -6, -12 -> "object not found";
      case -9 -> "buffer too small";
      case -10 -> "out of memory";
      case -13 -> "bad parameter";
      case STILL_MAPPED -> "cannot unmount: the LUN is still mapped";
      case -17, -22 -> "already exists";
      case -29 -> "no such volume";
      case -34 -> "resource busy";
      case -37 -> "cannot read volume config";
      case -103 -> "safety snapshot before rollback failed";
      case DATASET_BUSY -> "dataset busy, retry";
      case SNAPSHOT_GONE -> "snapshot does not exist";
      case LUN_GONE -> "LUN does not exist";
      case -618, -619 -> "dependent clones exist";
      default -> "";
    };
  }
}
