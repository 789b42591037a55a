package dev.caravan.csi.support;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcePEMEncryptorBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Private keys in the PEM forms openssl writes, read through BouncyCastle's PEM parser. */
class PemTest {
  @TempDir Path dir;

  private static KeyPair pair(String algorithm) throws Exception {
    return KeyPairGenerator.getInstance(algorithm).generateKeyPair();
  }

  @Test
  void readsPkcs8AndTheTraditionalRsaAndEcForms() throws Exception {
    for (String algorithm : new String[] {"EC", "RSA", "Ed25519"}) {
      KeyPair k = pair(algorithm);
      Path pkcs8 = Files.writeString(dir.resolve(algorithm + ".pk8.pem"), "a comment before the block\n"
          + "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder().encodeToString(k.getPrivate().getEncoded())
          + "\n-----END PRIVATE KEY-----\n");
      assertThat(Pem.privateKey(pkcs8).getEncoded()).as(algorithm).isEqualTo(k.getPrivate().getEncoded());
    }
    // The traditional forms as openssl writes them (its EC form carries the curve, which
    // BouncyCastle's writer leaves out of a JDK key).
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")), "needs openssl to write traditional PEM keys");
    Path ec = dir.resolve("ec.pem");
    Path rsa = dir.resolve("rsa.pem");
    run("openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", ec.toString());
    run("openssl", "genrsa", "-traditional", "-out", rsa.toString(), "2048");
    assertThat(Files.readString(ec)).startsWith("-----BEGIN EC PRIVATE KEY-----");
    assertThat(Files.readString(rsa)).startsWith("-----BEGIN RSA PRIVATE KEY-----");
    assertThat(Pem.privateKey(ec).getAlgorithm()).isEqualTo("EC");
    assertThat(Pem.privateKey(rsa).getAlgorithm()).isEqualTo("RSA");
    Path pk8 = dir.resolve("ec.pk8.pem");
    run("openssl", "pkcs8", "-topk8", "-nocrypt", "-in", ec.toString(), "-out", pk8.toString());
    assertThat(((java.security.interfaces.ECPrivateKey) Pem.privateKey(ec)).getS())
        .isEqualTo(((java.security.interfaces.ECPrivateKey) Pem.privateKey(pk8)).getS());
  }

  private static void run(String... command) throws Exception {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(out).isZero();
  }

  @Test
  void refusesEncryptedKeysAndFilesWithoutAKey() throws Exception {
    Path encrypted = dir.resolve("enc.pem");
    try (Writer w = Files.newBufferedWriter(encrypted, StandardCharsets.US_ASCII); JcaPEMWriter pem = new JcaPEMWriter(w)) {
      pem.writeObject(pair("EC"), new JcePEMEncryptorBuilder("AES-256-CBC").setProvider(new BouncyCastleProvider()).build("pw".toCharArray()));
    }
    assertThatThrownBy(() -> Pem.privateKey(encrypted)).isInstanceOf(GeneralSecurityException.class)
        .hasMessageContaining("encrypted private key").hasMessageContaining("openssl pkcs8 -topk8 -nocrypt");
    Path none = Files.writeString(dir.resolve("none.pem"), "nothing here\n");
    assertThatThrownBy(() -> Pem.privateKey(none)).hasMessageContaining("holds no PEM private key block");
  }
}
