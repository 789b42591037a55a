package dev.caravan.csi.peer;

import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateParsingException;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * Accepts a peer only if its chain validates (PKIX: signatures, validity dates, CA constraints) up to
 * one of the configured CA certificates, read at each handshake, and a DNS name in its leaf's
 * subjectAltName is a node the predicate accepts: the one node a client meant to reach, or any node
 * of the peer set for a server. Host names and IP addresses are not checked: the node name is the
 * identity.
 */
final class PeerTrustManager extends X509ExtendedTrustManager {
  private final CredentialFiles files;
  private final Predicate<String> node;
  private final String expected;
  private final RefusalReason refusedName;

  /**
   * @param node whether a node name (as the certificate spells it) is one this side talks to
   * @param expected what the predicate accepts, for the error message
   * @param refusedName the reason a certificate naming no such node is refused for
   */
  PeerTrustManager(CredentialFiles files, Predicate<String> node, String expected, RefusalReason refusedName) {
    this.files = files;
    this.node = node;
    this.expected = expected;
    this.refusedName = refusedName;
  }

  /** The DNS names in a certificate's subjectAltName: the node names it vouches for. */
  static List<String> nodeNames(X509Certificate leaf) {
    List<String> out = new ArrayList<>();
    try {
      Collection<List<?>> sans = leaf.getSubjectAlternativeNames();
      if (sans != null) {
        for (List<?> san : sans) {
          if (Integer.valueOf(2).equals(san.get(0)) && san.get(1) instanceof String name) {
            out.add(name);
          }
        }
      }
    } catch (CertificateParsingException e) {
      return List.of();
    }
    return out;
  }

  /** Checks a peer's chain against the credential files as they are now; PeerRefusal naming the rule it breaks. */
  void check(X509Certificate[] chain) throws PeerRefusal {
    if (chain == null || chain.length == 0) {
      throw new PeerRefusal(RefusalReason.NO_CERTIFICATE, Optional.empty(), "the peer presented no certificate", null);
    }
    Optional<X509Certificate> leaf = Optional.of(chain[0]);
    try {
      validate(List.of(chain), files.current().authorities(), null);
    } catch (CertPathValidatorException e) {
      RefusalReason reason = e.getReason() == CertPathValidatorException.BasicReason.EXPIRED
          || e.getReason() == CertPathValidatorException.BasicReason.NOT_YET_VALID
          ? RefusalReason.EXPIRED : RefusalReason.UNKNOWN_CA;
      throw new PeerRefusal(reason, leaf, "peer certificate " + chain[0].getSubjectX500Principal()
          + " does not validate against the peer CA: " + e.getMessage(), e);
    } catch (GeneralSecurityException e) {
      throw new PeerRefusal(RefusalReason.UNKNOWN_CA, leaf, "peer certificate " + chain[0].getSubjectX500Principal()
          + " does not validate against the peer CA: " + e.getMessage(), e);
    }
    List<String> names = nodeNames(chain[0]);
    if (names.stream().map(n -> n.toLowerCase(Locale.ROOT)).noneMatch(node)) {
      throw new PeerRefusal(refusedName, leaf, "peer certificate names node(s) " + names + " in its subjectAltName,"
          + " not " + expected, null);
    }
  }

  /**
   * Validates {@code chain} (leaf first) with PKIX up to one of {@code authorities}, at {@code at} (now when
   * null): signatures, validity dates, CA constraints. A chain may end with the CA itself.
   */
  static void validate(List<X509Certificate> chain, List<X509Certificate> authorities, Date at)
      throws GeneralSecurityException {
    Set<TrustAnchor> anchors = new HashSet<>();
    for (X509Certificate ca : authorities) {
      anchors.add(new TrustAnchor(ca, null));
    }
    PKIXParameters params = new PKIXParameters(anchors);
    // No CRL or OCSP endpoint exists for a private peer CA; short-lived certificates are the revocation.
    params.setRevocationEnabled(false);
    if (at != null) {
      params.setDate(at);
    }
    CertificateFactory cf = CertificateFactory.getInstance("X.509");
    // A chain file may end with the CA itself; the path to validate stops below the anchor.
    List<X509Certificate> path = new ArrayList<>();
    for (X509Certificate c : chain) {
      if (anchors.stream().noneMatch(a -> a.getTrustedCert().equals(c))) {
        path.add(c);
      }
    }
    if (path.isEmpty()) {
      throw new CertificateException("the chain holds only the CA certificate, no certificate of its own");
    }
    CertPathValidator.getInstance("PKIX").validate(cf.generateCertPath(path), params);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    check(chain);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    check(chain);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws CertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws CertificateException {
    check(chain);
  }

  @Override
  public X509Certificate[] getAcceptedIssuers() {
    return files.current().authorities().toArray(X509Certificate[]::new);
  }
}
