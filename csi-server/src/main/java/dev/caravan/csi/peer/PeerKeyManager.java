package dev.caravan.csi.peer;

import java.net.Socket;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/** Presents this node's certificate, as the credential files hold it at each handshake. */
final class PeerKeyManager extends X509ExtendedKeyManager {
  private static final String ALIAS = "caravan-peer";
  private final CredentialFiles files;

  PeerKeyManager(CredentialFiles files) {
    this.files = files;
  }

  @Override
  public String[] getClientAliases(String keyType, Principal[] issuers) {
    return new String[] {ALIAS};
  }

  @Override
  public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
    return ALIAS;
  }

  @Override
  public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
    return ALIAS;
  }

  @Override
  public String[] getServerAliases(String keyType, Principal[] issuers) {
    return new String[] {ALIAS};
  }

  @Override
  public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
    return matches(keyType) ? ALIAS : null;
  }

  @Override
  public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
    return matches(keyType) ? ALIAS : null;
  }

  /** The server side is offered each key type in turn; only ours fits (EC keys answer "EC"). */
  private boolean matches(String keyType) {
    return keyType == null || keyType.equalsIgnoreCase(files.current().key().getAlgorithm());
  }

  @Override
  public X509Certificate[] getCertificateChain(String alias) {
    return files.current().chain().toArray(X509Certificate[]::new);
  }

  @Override
  public PrivateKey getPrivateKey(String alias) {
    return files.current().key();
  }
}
