package dev.caravan.csi.peer;

import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;

/**
 * A peer certificate this node does not accept, with the rule it breaks and what it says of itself,
 * so that whoever sees the failed handshake can log and report it without parsing messages.
 */
final class PeerRefusal extends CertificateException {
  private static final long serialVersionUID = 1L;

  private final RefusalReason reason;
  private final String subject;
  private final List<String> names;

  PeerRefusal(RefusalReason reason, Optional<X509Certificate> leaf, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
    this.subject = leaf.map(c -> c.getSubjectX500Principal().getName()).orElse("");
    this.names = leaf.map(PeerTrustManager::nodeNames).orElse(List.of());
  }

  RefusalReason reason() {
    return reason;
  }

  /** The presented leaf's subject, empty when none was presented. */
  String subject() {
    return subject;
  }

  /** The DNS names of the presented leaf's subjectAltName. */
  List<String> names() {
    return names;
  }

  /** The first PeerRefusal among {@code t}'s causes. */
  static Optional<PeerRefusal> in(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof PeerRefusal r) {
        return Optional.of(r);
      }
    }
    return Optional.empty();
  }
}
