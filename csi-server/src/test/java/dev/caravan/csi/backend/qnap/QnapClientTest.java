package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.backend.qnap.QnapApi.Chap;
import dev.caravan.csi.backend.qnap.QnapApi.Lun;
import dev.caravan.csi.backend.qnap.QnapApi.LunState;
import dev.caravan.csi.backend.qnap.QnapApi.Snap;
import dev.caravan.csi.backend.qnap.QnapApi.Target;
import dev.caravan.csi.backend.qnap.QnapSimulator.Call;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The QNAP client against the simulator, on both transports: the whole object lifecycle through the
 * asynchronous states, reused indices, session expiry, refused logins and error codes.
 */
class QnapClientTest {
  private static final long GIB = 1L << 30;
  private static final String NODE_A = "iqn.1993-08.org.debian:01:node-a";

  private QnapSimulator sim;
  private QnapApi api;

  /** The ways Caravan talks to an appliance: CGI to QTS, CGI to hero, REST to hero. */
  enum Wire {
    CGI_QTS(Flavour.QTS, false),
    CGI_HERO(Flavour.HERO, false),
    REST_HERO(Flavour.HERO, true);

    final Flavour flavour;
    final boolean rest;

    Wire(Flavour flavour, boolean rest) {
      this.flavour = flavour;
      this.rest = rest;
    }
  }

  static Stream<Wire> wires() {
    return Stream.of(Wire.values());
  }

  private QnapApi connect(Wire wire, String password) {
    sim = QnapSimulator.start(wire.flavour);
    return client(wire, password);
  }

  private QnapApi client(Wire wire, String password) {
    SSLContext tls;
    try {
      tls = SSLContext.getDefault();
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
    ApplianceLogin s = new ApplianceLogin(new Http(sim.url(), tls, Duration.ofSeconds(10)), new Credentials(QnapSimulator.USER, password),
        Duration.ofMinutes(5), Clock.systemUTC());
    api = wire.rest ? new RestApi(s, Duration.ofSeconds(10)) : new CgiApi(s, Duration.ofSeconds(10));
    return api;
  }

  @AfterEach
  void stop() {
    if (api != null) {
      api.close();
    }
    if (sim != null) {
      sim.close();
    }
  }

  @ParameterizedTest
  @MethodSource("wires")
  void everyObjectGoesThroughItsAsynchronousStatesAndIsGoneAfterwards(Wire wire) {
    QnapApi q = connect(wire, QnapSimulator.PASSWORD);
    assertThat(q.appliance().hero()).isEqualTo(wire.flavour == Flavour.HERO);
    Lun lun = q.createLun("cve-db-0123456789ab", 2, 1, true);
    assertThat(lun.state()).as("returned only once ready").isEqualTo(LunState.READY);
    assertThat(lun.naa()).hasSize(32);
    assertThat(lun.capacityBytes()).isEqualTo(2 * GIB);
    assertThat(q.luns()).extracting(Lun::name).containsExactly("cve-db-0123456789ab");

    Target t = q.createTarget("cve-db-0123456789ab");
    assertThat(t.iqn()).isEqualTo(QnapSimulator.IQN_PREFIX + "cve-db-0123456789ab" + QnapSimulator.IQN_POSTFIX);
    assertThat(q.map(lun, t)).isZero();
    q.allow(t, NODE_A, Optional.of(new Chap("user", "chap-secret-123", Optional.empty(), Optional.empty())));
    assertThat(q.acl(t)).containsExactly(NODE_A);
    assertThat(sim.chapOf("cve-db-0123456789ab", NODE_A)).map(Chap::password).contains("chap-secret-123");

    Snap snap = q.createSnapshot(lun, "cs-s1-0123456789ab");
    assertThat(snap.ready()).isTrue();
    assertThat(q.snapshots(lun)).extracting(Snap::name).containsExactly("cs-s1-0123456789ab");
    Lun clone = q.cloneSnapshot(lun, snap, "cve-copy-0123456789ab", 1, false);
    assertThat(clone.capacityBytes()).isEqualTo(2 * GIB);
    assertThat(clone.state()).isEqualTo(LunState.READY);
    assertThat(q.resizeLun(clone, 5).capacityBytes()).isEqualTo(5 * GIB);
    assertThat(sim.lunBytes("cve-copy-0123456789ab")).isEqualTo(5 * GIB);

    q.deleteSnapshot(lun, snap);
    assertThat(q.snapshots(lun)).isEmpty();
    q.disallow(t, NODE_A);
    assertThat(q.acl(t)).isEmpty();
    q.unmap(lun, t);
    q.deleteTarget(t);
    q.deleteLun(lun);
    q.deleteLun(clone);
    assertThat(sim.lunNames()).isEmpty();
    assertThat(sim.targetNames()).isEmpty();
    if (!wire.rest) {
      assertThat(q.lun(lun.index())).as("a deleted index answers a ghost row").map(Lun::state).contains(LunState.GHOST);
    }
    assertThat(sim.violations()).isEmpty();
    assertThat(sim.calls()).allSatisfy(c -> assertThat(c.queryKeys()).as("nothing in the URL").isEmpty());
  }

  @ParameterizedTest
  @MethodSource("wires")
  void aReusedIndexIsNeverTouched(Wire wire) {
    QnapApi q = connect(wire, QnapSimulator.PASSWORD);
    Lun mine = q.createLun("cve-mine-0123456789ab", 1, 1, true);
    Target t = q.createTarget("cve-mine-0123456789ab");
    sim.deleteBehindTheBack("cve-mine-0123456789ab");
    int foreign = sim.createForeignLun("someone-elses-data", 3);
    assertThat(foreign).as("the appliance reuses the index").isEqualTo(mine.index());
    long before = sim.calls().size();

    q.deleteLun(mine);
    q.unmap(mine, t);
    assertThatThrownBy(() -> q.resizeLun(mine, 9)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.NOT_FOUND))
        .hasMessageContaining("index was reused");
    assertThatThrownBy(() -> q.createSnapshot(mine, "cs-x-0123456789ab")).isInstanceOf(CsiException.class);
    assertThatThrownBy(() -> q.map(mine, t)).isInstanceOf(CsiException.class);
    assertThat(sim.calls().subList((int) before, sim.calls().size())).extracting(Call::func)
        .as("only reads went out").allMatch(f -> f.equals("extra_get") || f.startsWith("GET "));
    assertThat(sim.lunNames()).containsValue("someone-elses-data");
    assertThat(sim.lunBytes("someone-elses-data")).isEqualTo(3 * GIB);
  }

  @ParameterizedTest
  @MethodSource("wires")
  void anExpiredSessionIsRenewedOnceAndTheCallRepeated(Wire wire) {
    QnapApi q = connect(wire, QnapSimulator.PASSWORD);
    assertThat(q.luns()).isEmpty();
    assertThat(sim.logins()).isEqualTo(1);
    sim.expireSessions();
    Lun lun = q.createLun("cve-after-0123456789ab", 1, 1, false);
    assertThat(lun.thin()).isFalse();
    assertThat(sim.logins()).isEqualTo(2);
    assertThat(sim.lunNames()).containsValue("cve-after-0123456789ab");
    q.close();
    assertThat(sim.liveSessions()).as("logged out on close").isZero();
  }

  @ParameterizedTest
  @MethodSource("wires")
  void aSessionThatTimedOutIsRenewed(Wire wire) throws InterruptedException {
    QnapApi q = connect(wire, QnapSimulator.PASSWORD);
    sim.sessionTtl = Duration.ofMillis(300);
    assertThat(q.luns()).isEmpty();
    Thread.sleep(400); // past the appliance's session timeout
    assertThat(q.targets()).isEmpty();
    assertThat(sim.logins()).isEqualTo(2);
  }

  @Test
  void aRefusedLoginIsNotRetriedAndKeepsThePasswordOutOfTheMessage() {
    String wrong = "not-the-password-42";
    QnapApi q = connect(Wire.CGI_QTS, wrong);
    assertThatThrownBy(q::luns).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.UNAVAILABLE))
        .hasMessageContaining("refused the login of 'admin'").hasMessageNotContaining(wrong);
    for (int i = 0; i < 5; i++) {
      assertThatThrownBy(q::luns).hasMessageContaining("not trying again before").hasMessageNotContaining(wrong);
    }
    assertThat(sim.logins()).as("one attempt, no loop into the lockout").isEqualTo(1);
    // the good credentials still work: the appliance did not lock this address out
    assertThat(client(Wire.CGI_QTS, QnapSimulator.PASSWORD).luns()).isEmpty();
  }

  @Test
  void appliancesErrorsKeepTheirCodeAndMapToCsiStatuses() {
    QnapApi q = connect(Wire.CGI_QTS, QnapSimulator.PASSWORD);
    Lun lun = q.createLun("cve-err-0123456789ab", 1, 1, true);
    Target t = q.createTarget("cve-err-0123456789ab");
    q.map(lun, t);
    assertThatThrownBy(() -> q.deleteLun(lun)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.FAILED_PRECONDITION))
        .hasMessageContaining("result -14").hasMessageContaining("still mapped");
    q.unmap(lun, t);
    sim.inject("remove_lun", QnapErrors.DATASET_BUSY, 2);
    q.deleteLun(lun);
    assertThat(sim.calls().stream().filter(c -> c.path().equals(CgiApi.LUN) && c.func().equals("remove_lun")))
        .as("the refused one, two busy answers, then the remove").hasSize(4);
    assertThat(sim.lunNames()).isEmpty();
    sim.inject("add_lun", -13, 1);
    assertThatThrownBy(() -> q.createLun("cve-bad-0123456789ab", 1, 1, true)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.INVALID_ARGUMENT))
        .hasMessageContaining("result -13 (bad parameter)");
    sim.injectHttp("extra_get", 503);
    assertThatThrownBy(q::luns).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.UNAVAILABLE)).hasMessageContaining("HTTP 503");
    assertThatThrownBy(() -> q.pool(7)).isInstanceOf(CsiException.class).hasMessageContaining("pool 7 does not exist");
  }

  @Test
  void restErrorsKeepTheAppliancesWords() {
    QnapApi q = connect(Wire.REST_HERO, QnapSimulator.PASSWORD);
    sim.inject("POST /api/storage/v1/volumes", -10, 1);
    assertThatThrownBy(() -> q.createLun("cve-x-0123456789ab", 1, 1, true)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.RESOURCE_EXHAUSTED))
        .hasMessageContaining("result -10").hasMessageContaining("injected failure");
  }

  @Test
  void answersWithoutARootAndWithWhitespaceInIqnsAreRead() {
    QnapApi q = connect(Wire.CGI_QTS, QnapSimulator.PASSWORD);
    sim.multiRoot = true;
    sim.whitespaceIqn = true;
    Lun lun = q.createLun("cve-quirk-0123456789ab", 1, 1, true);
    Target t = q.createTarget("cve-quirk-0123456789ab");
    q.map(lun, t);
    assertThat(q.targets()).extracting(Target::iqn)
        .containsExactly(QnapSimulator.IQN_PREFIX + "cve-quirk-0123456789ab" + QnapSimulator.IQN_POSTFIX);
    assertThat(q.luns().getFirst().naa()).hasSize(32);
    q.allow(t, NODE_A, Optional.empty());
    assertThat(q.acl(t)).containsExactly(NODE_A);
  }

  @Test
  void heroInstantClonesKeepTheirSnapshot() {
    QnapApi q = connect(Wire.CGI_HERO, QnapSimulator.PASSWORD);
    Lun lun = q.createLun("cve-src-0123456789ab", 1, 1, true);
    Snap snap = q.createSnapshot(lun, "cs-base-0123456789ab");
    q.cloneSnapshot(lun, snap, "cve-cow-0123456789ab", 1, true);
    assertThat(sim.calls()).extracting(Call::func).contains("instant_clone_qsnapshot", "get_return");
    assertThatThrownBy(() -> q.deleteSnapshot(lun, snap)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.FAILED_PRECONDITION))
        .hasMessageContaining("dependent clones");
  }

  @Test
  void theRecorderSeesTheDocumentedParameters() {
    QnapApi q = connect(Wire.CGI_QTS, QnapSimulator.PASSWORD);
    Lun lun = q.createLun("cve-rec-0123456789ab", 1, 2, false);
    Target t = q.createTarget("cve-rec-0123456789ab");
    q.allow(t, NODE_A, Optional.of(new Chap("u", "p4ssw0rd-chap", Optional.of("mu"), Optional.of("mp4ssw0rd"))));
    q.createSnapshot(lun, "cs-r-0123456789ab");
    List<Call> calls = sim.calls();
    Call login = calls.stream().filter(c -> c.path().endsWith("authLogin.cgi") && c.params().containsKey("user"))
        .findFirst().orElseThrow();
    assertThat(login.params()).containsKeys("user", "pwd", "serviceKey").doesNotContainValue(QnapSimulator.PASSWORD);
    Call add = calls.stream().filter(c -> c.path().equals(CgiApi.LUN) && c.func().equals("add_lun")).findFirst().orElseThrow();
    assertThat(add.params()).containsEntry("FileIO", "no").containsEntry("LUNPath", "cve-rec-0123456789ab")
        .containsEntry("LUNCapacity", "1").containsEntry("poolID", "2").containsEntry("LUNThinAllocate", "0")
        .doesNotContainKey("lv_threshold");
    Call target = calls.stream().filter(c -> c.func().equals("add_target")).findFirst().orElseThrow();
    assertThat(target.params()).containsEntry("targetAlias", "cve-rec-0123456789ab").containsEntry("bTargetClusterEnable", "1");
    Call init = calls.stream().filter(c -> c.func().equals("add_init")).findFirst().orElseThrow();
    assertThat(init.method()).isEqualTo("POST");
    assertThat(init.params()).containsEntry("bCHAPEnable", "1").containsEntry("bMutualCHAPEnable", "1")
        .containsEntry("CHAPPasswd", "p4ssw0rd-chap").containsEntry("initiatorIQN", NODE_A);
    Call snap = calls.stream().filter(c -> c.func().equals("create_snapshot")).findFirst().orElseThrow();
    assertThat(snap.params()).containsEntry("expire_min", "0").containsEntry("vital", "1").containsEntry("snapshot_type", "0");
    assertThat(calls).allSatisfy(c -> assertThat(c.queryKeys()).isEmpty());
    assertThat(sim.violations()).isEmpty();
  }

  /**
   * Work still running when the plugin stops (the fence check that readiness starts in the background) must
   * not log in again after the logout: that session would stay open on the appliance, which caps them.
   */
  @Test
  void noCallLogsInAgainAfterTheLogout() {
    sim = QnapSimulator.start(Flavour.QTS);
    ApplianceLogin s = new ApplianceLogin(new Http(sim.url(), tlsDefault(), Duration.ofSeconds(5)),
        new Credentials(QnapSimulator.USER, QnapSimulator.PASSWORD), Duration.ofMinutes(5), Clock.systemUTC());
    api = new CgiApi(s, Duration.ofSeconds(5));
    assertThat(api.luns()).isEmpty();
    assertThat(sim.liveSessions()).isEqualTo(1);
    api.close();
    assertThatThrownBy(api::luns).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.UNAVAILABLE))
        .hasMessageContaining("logged out of the QNAP appliance because the plugin is stopping");
    assertThat(sim.logins()).isEqualTo(1);
    assertThat(sim.liveSessions()).isZero();
  }

  @Test
  void asynchronousWorkIsPolledWithinABoundAndARetryFinishesIt() {
    sim = QnapSimulator.start(Flavour.QTS);
    sim.creatingReads = 1_000_000;
    ApplianceLogin s = new ApplianceLogin(new Http(sim.url(), tlsDefault(), Duration.ofSeconds(5)),
        new Credentials(QnapSimulator.USER, QnapSimulator.PASSWORD), Duration.ofMinutes(5), Clock.systemUTC());
    api = new CgiApi(s, Duration.ofMillis(1500));
    assertThatThrownBy(() -> api.createLun("cve-slow-0123456789ab", 1, 1, true)).isInstanceOf(CsiException.class)
        .satisfies(e -> assertThat(((CsiException) e).kind()).isEqualTo(Kind.UNAVAILABLE))
        .hasMessageContaining("has not finished creating LUN 'cve-slow-0123456789ab'");
    long reads = sim.calls().stream().filter(c -> c.params().containsKey("lun_info")).count();
    assertThat(reads).as("backoff, not a busy loop").isBetween(2L, 15L);
    sim.finishCreating();
    Lun found = api.luns().stream().filter(l -> l.name().equals("cve-slow-0123456789ab")).findFirst().orElseThrow();
    assertThat(api.awaitReady(found).state()).isEqualTo(LunState.READY);
  }

  @Test
  void theTargetListenerSeesEveryChangeInOrder() {
    QnapApi q = connect(Wire.CGI_QTS, QnapSimulator.PASSWORD);
    List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
    sim.listener(new TargetListener() {
      @Override
      public void lunCreated(int lunIndex, String name, long bytes, String naa) {
        events.add("lun+ " + lunIndex + " " + name + " " + bytes);
      }

      @Override
      public void lunDeleted(int lunIndex) {
        events.add("lun- " + lunIndex);
      }

      @Override
      public void targetCreated(int targetIndex, String iqn) {
        events.add("target+ " + targetIndex + " " + iqn);
      }

      @Override
      public void targetDeleted(int targetIndex) {
        events.add("target- " + targetIndex);
      }

      @Override
      public void lunMapped(int targetIndex, int lunIndex, int lunNumber) {
        events.add("map " + targetIndex + " " + lunIndex + " " + lunNumber);
      }

      @Override
      public void lunUnmapped(int targetIndex, int lunIndex) {
        events.add("unmap " + targetIndex + " " + lunIndex);
      }

      @Override
      public void aclChanged(int targetIndex, java.util.Map<String, Optional<Chap>> initiators) {
        events.add("acl " + targetIndex + " " + initiators.keySet());
      }
    });
    Lun lun = q.createLun("cve-lio-0123456789ab", 1, 1, true);
    Target t = q.createTarget("cve-lio-0123456789ab");
    q.map(lun, t);
    q.allow(t, NODE_A, Optional.empty());
    q.disallow(t, NODE_A);
    q.unmap(lun, t);
    q.deleteTarget(t);
    q.deleteLun(lun);
    assertThat(events).containsExactly("lun+ 0 cve-lio-0123456789ab " + GIB,
        "target+ 0 " + t.iqn(), "map 0 0 0", "acl 0 [" + NODE_A + "]", "acl 0 []", "unmap 0 0", "target- 0", "lun- 0");
  }

  private static SSLContext tlsDefault() {
    try {
      return SSLContext.getDefault();
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}
