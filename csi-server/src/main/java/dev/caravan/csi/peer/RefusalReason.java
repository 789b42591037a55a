package dev.caravan.csi.peer;

/** Why a node refused a peer's handshake or call: the metric's label and the rule broken, in words. */
enum RefusalReason {
  PLAINTEXT("plaintext", "it spoke plain text, not TLS"),
  NO_CERTIFICATE("no_certificate", "it presented no certificate"),
  UNKNOWN_CA("unknown_ca", "its certificate does not chain to the peer CA"),
  EXPIRED("expired", "its certificate has expired or is not valid yet"),
  NOT_A_PEER("not_a_peer", "the node its certificate names is not a node of its peer set"),
  WRONG_NODE("wrong_node", "its certificate names another node than the one called"),
  HANDSHAKE("handshake", "the TLS handshake failed");

  /** The {@code reason} label of {@code caravan_peer_refusals_total}. */
  final String label;
  /** The rule broken, said of the refused side. */
  final String rule;

  RefusalReason(String label, String rule) {
    this.label = label;
    this.rule = rule;
  }
}
