package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.iscsi.Chap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What the qnap node reads from a volume's context ({@link QnapController} writes it): the target's
 * IQN, the per-target LUN number, the portals, the LUN's NAA id (its WWID is {@code 3} + NAA) and
 * the names of the secrets holding CHAP credentials.
 */
record LunContext(String target, int number, List<String> portals, Wwid wwid, Optional<ChapSecrets> chapNames) {
  static final String TARGET = "targetIqn";
  static final String LUN = "lun";
  static final String PORTALS = "portals";
  static final String NAA = "naa";
  static final String CHAP_USER = "chapUserSecret";
  static final String CHAP_PASSWORD = "chapPasswordSecret";
  static final String MUTUAL_USER = "mutualChapUserSecret";
  static final String MUTUAL_PASSWORD = "mutualChapPasswordSecret";

  private static final Pattern NAA_ID = Pattern.compile("[0-9a-fA-F]{16}|[0-9a-fA-F]{32}");

  /** Secret names, never values. */
  record ChapSecrets(String user, String password, Optional<String> mutualUser, Optional<String> mutualPassword) {}

  LunContext {
    portals = List.copyOf(portals);
  }

  /** Parses the context; INVALID_ARGUMENT naming the key when something is missing or malformed. */
  static LunContext of(VolumeRef volume) {
    Map<String, String> c = volume.context();
    String target = required(c, TARGET);
    if (!QnapIds.isInitiator(target)) { // the same iSCSI name rules hold for targets
      throw CsiException.invalid("volume_context." + TARGET + " '" + target + "' is not an iSCSI name");
    }
    String lun = required(c, LUN);
    if (!lun.matches("[0-9]{1,5}")) {
      throw CsiException.invalid("volume_context." + LUN + " '" + lun + "' must be a LUN number (0-99999)");
    }
    List<String> portals = List.of(required(c, PORTALS).split(",", -1)).stream().map(String::strip).toList();
    for (String p : portals) {
      try {
        dev.caravan.storage.iscsi.Portal.parse(p);
      } catch (IllegalArgumentException e) {
        throw CsiException.invalid("volume_context." + PORTALS + " entry '" + p + "' is not host:port: " + e.getMessage());
      }
    }
    String naa = required(c, NAA);
    if (!NAA_ID.matcher(naa).matches()) {
      throw CsiException.invalid("volume_context." + NAA + " '" + naa + "' must be an NAA id of 16 or 32 hex digits");
    }
    Optional<ChapSecrets> chap = Optional.empty();
    if (c.containsKey(CHAP_USER) || c.containsKey(CHAP_PASSWORD)) {
      chap = Optional.of(new ChapSecrets(required(c, CHAP_USER), required(c, CHAP_PASSWORD),
          Optional.ofNullable(c.get(MUTUAL_USER)), Optional.ofNullable(c.get(MUTUAL_PASSWORD))));
      if (chap.get().mutualUser().isPresent() != chap.get().mutualPassword().isPresent()) {
        throw CsiException.invalid("volume_context." + MUTUAL_USER + " and " + MUTUAL_PASSWORD
            + " come together or not at all");
      }
    }
    return new LunContext(target, Integer.parseInt(lun), portals, Wwid.of("3" + naa.toLowerCase(java.util.Locale.ROOT)),
        chap);
  }

  /** The context, if it is complete: for detach and health, which never refuse. */
  static Optional<LunContext> lenient(VolumeRef volume) {
    try {
      return Optional.of(of(volume));
    } catch (CsiException e) {
      return Optional.empty();
    }
  }

  /** The CHAP credentials from the NodeStage secrets; INVALID_ARGUMENT naming a missing secret. */
  Optional<Chap> chap(Map<String, String> secrets) {
    if (chapNames.isEmpty()) {
      return Optional.empty();
    }
    ChapSecrets n = chapNames.get();
    try {
      return Optional.of(chap(n, secrets));
    } catch (IllegalArgumentException e) {
      throw CsiException.invalid("the CHAP secrets named by the volume's context are unusable: " + e.getMessage());
    }
  }

  private static Chap chap(ChapSecrets n, Map<String, String> secrets) {
    String user = secret(secrets, n.user());
    String password = secret(secrets, n.password());
    if (n.mutualUser().isPresent()) {
      return Chap.mutual(user, password, secret(secrets, n.mutualUser().get()),
          secret(secrets, n.mutualPassword().orElseThrow()));
    }
    return Chap.oneWay(user, password);
  }

  private static String secret(Map<String, String> secrets, String name) {
    String v = secrets.get(name);
    if (v == null || v.isEmpty()) {
      throw CsiException.invalid("secrets lack '" + name + "', which the volume's context names for the target's"
          + " CHAP; add it to the volume's secrets");
    }
    return v;
  }

  private static String required(Map<String, String> c, String key) {
    String v = c.get(key);
    if (v == null || v.isBlank()) {
      throw CsiException.invalid("volume_context." + key + " is required for a qnap volume (CreateVolume sets it)");
    }
    return v.strip();
  }
}
