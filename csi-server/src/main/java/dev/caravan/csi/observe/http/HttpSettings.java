package dev.caravan.csi.observe.http;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Optional;
import java.util.Set;

/**
 * Where and how the observe HTTP server listens. Loopback by default; any other address needs TLS and
 * a bearer token (read from a file, never from the command line) or mutual TLS (server certificate and
 * key, plus the CA that client certificates must chain to). {@link #check()} enforces that.
 *
 * @param tlsClientCa when set with the certificate and key, clients must present a certificate signed by it
 */
public record HttpSettings(
    String host, int port, Optional<Path> tokenFile, Optional<Path> tlsCert, Optional<Path> tlsKey,
    Optional<Path> tlsClientCa) {
  public static final String DEFAULT_HOST = "127.0.0.1";
  public static final int DEFAULT_PORT = 9633;
  static final int MIN_TOKEN_LENGTH = 16;

  public static HttpSettings loopback(int port) {
    return new HttpSettings(DEFAULT_HOST, port, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty());
  }

  /** Parses {@code host:port}, {@code [v6]:port} or {@code :port} (= loopback). */
  public static HttpSettings parseListen(String listen) {
    int colon = listen.lastIndexOf(':');
    if (colon < 0) {
      throw new IllegalArgumentException("--http-listen '" + listen + "' must be HOST:PORT, e.g. 127.0.0.1:9633");
    }
    String host = listen.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(listen.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--http-listen '" + listen + "': the port is not a number", e);
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("--http-listen '" + listen + "': port out of range");
    }
    return new HttpSettings(host.isEmpty() ? DEFAULT_HOST : host, port, Optional.empty(), Optional.empty(),
        Optional.empty(), Optional.empty());
  }

  public HttpSettings withToken(Optional<Path> file) {
    return new HttpSettings(host, port, file, tlsCert, tlsKey, tlsClientCa);
  }

  public HttpSettings withTls(Optional<Path> cert, Optional<Path> key, Optional<Path> clientCa) {
    return new HttpSettings(host, port, tokenFile, cert, key, clientCa);
  }

  public boolean tls() {
    return tlsCert.isPresent() && tlsKey.isPresent();
  }

  public boolean mutualTls() {
    return tls() && tlsClientCa.isPresent();
  }

  public InetSocketAddress address() throws UnknownHostException {
    return new InetSocketAddress(InetAddress.getByName(host), port);
  }

  /** Whether every address {@code host} names is a loopback address. */
  public boolean loopbackOnly() throws UnknownHostException {
    for (InetAddress a : InetAddress.getAllByName(host)) {
      if (!a.isLoopbackAddress()) {
        return false;
      }
    }
    return true;
  }

  /** Refuses an unsafe or inconsistent configuration, saying what to add. */
  public void check() throws UnknownHostException {
    if (tlsCert.isPresent() != tlsKey.isPresent()) {
      throw new IllegalArgumentException("--http-tls-cert and --http-tls-key go together");
    }
    if (tlsClientCa.isPresent() && !tls()) {
      throw new IllegalArgumentException("--http-tls-client-ca needs --http-tls-cert and --http-tls-key");
    }
    if (loopbackOnly()) {
      return;
    }
    // Off loopback a bearer token over plain HTTP would cross the network readable by anyone on the
    // path, and with it every request it authorizes: encryption is required, not only authentication.
    if (!tls()) {
      throw new IllegalArgumentException("refusing to serve usage, metrics and the inspector on " + host + ":" + port
          + " (not a loopback address) without encryption: give --http-tls-cert and --http-tls-key, with"
          + " --http-tls-client-ca (mTLS) or --http-token-file (or listen on 127.0.0.1)");
    }
    if (tokenFile.isEmpty() && !mutualTls()) {
      throw new IllegalArgumentException("refusing to serve usage, metrics and the inspector on " + host + ":" + port
          + " (not a loopback address) without authentication: give --http-tls-client-ca (mTLS) or"
          + " --http-token-file (or listen on 127.0.0.1)");
    }
  }

  /** Reads the token (surrounding whitespace removed); refuses short tokens and warns about open files. */
  public Optional<byte[]> readToken() throws IOException {
    if (tokenFile.isEmpty()) {
      return Optional.empty();
    }
    Path f = tokenFile.get();
    String token = Files.readString(f, StandardCharsets.UTF_8).strip();
    if (token.length() < MIN_TOKEN_LENGTH) {
      throw new IllegalArgumentException("the token in " + f + " is shorter than " + MIN_TOKEN_LENGTH
          + " characters; generate one with: head -c 32 /dev/urandom | base64 > " + f);
    }
    if (token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
      throw new IllegalArgumentException("the token in " + f + " must be printable ASCII without spaces");
    }
    try {
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(f);
      if (perms.contains(PosixFilePermission.OTHERS_READ)) {
        System.getLogger(HttpSettings.class.getName()).log(System.Logger.Level.WARNING,
            "token file {0} is readable by every user; chmod 600 it", f);
      }
    } catch (UnsupportedOperationException e) {
      // not a POSIX filesystem
    }
    return Optional.of(token.getBytes(StandardCharsets.US_ASCII));
  }
}
