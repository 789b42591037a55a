package dev.caravan.csi.peer;

import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.cert.CertPathValidator;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateParsingException;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
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

  /**
   * @param node whether a node name (as the certificate spells it) is one this side talks to
   * @param expected what the predicate accepts, for the error message
   */
  PeerTrustManager(CredentialFiles files, Predicate<String> node, String expected) {
    this.files = files;
    this.node = node;
    this.expected = expected;
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

  private void check(X509Certificate[] chain) throws CertificateException {
    if (chain == null || chain.length == 0) {
      throw new CertificateException("the peer presented no certificate");
    }
    Set<TrustAnchor> anchors = new HashSet<>();
    for (X509Certificate ca : files.current().authorities()) {
      anchors.add(new TrustAnchor(ca, null));
    }
    try {
      PKIXParameters params = new PKIXParameters(anchors);
      // No CRL or OCSP endpoint exists for a private peer CA; short-lived certificates are the revocation.
      params.setRevocationEnabled(false);
      CertificateFactory cf = CertificateFactory.getInstance("X.509");
      // A chain file may end with the CA itself; the path to validate stops below the anchor.
      List<X509Certificate> path = new ArrayList<>();
      for (X509Certificate c : chain) {
        if (anchors.stream().noneMatch(a -> a.getTrustedCert().equals(c))) {
          path.add(c);
        }
      }
      if (path.isEmpty()) {
        throw new CertificateException("the peer presented only the CA certificate, no certificate of its own");
      }
      CertPathValidator.getInstance("PKIX").validate(cf.generateCertPath(path), params);
    } catch (GeneralSecurityException e) {
      throw new CertificateException("peer certificate " + chain[0].getSubjectX500Principal()
          + " does not validate against the peer CA: " + e.getMessage(), e);
    }
    List<String> names = nodeNames(chain[0]);
    if (names.stream().map(n -> n.toLowerCase(Locale.ROOT)).noneMatch(node)) {
      throw new CertificateException("peer certificate names node(s) " + names + " in its subjectAltName, not "
          + expected);
    }
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
