package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.BackendHalves;
import dev.caravan.csi.backend.BackendObject;
import dev.caravan.csi.backend.BoundedReadiness;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.Readiness;
import dev.caravan.csi.backend.VolumeRef;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The {@code qnap} backend: iSCSI LUNs on a QNAP appliance (settings: {@link QnapConfig}; ids:
 * {@link QnapIds}; the fence: {@link QnapController}; the node half, open-iscsi and multipath:
 * {@link QnapNode}). Opening does not contact the appliance unless {@code qnap.transport=auto},
 * which logs in to read the firmware; Probe is ready while the appliance answers, within 4 s. Without
 * {@code qnap.url} the instance is node-only: no appliance account, no API, controller calls refused
 * ({@link NoAppliance}), and Probe ready whatever the appliance's API does, since attaching needs only
 * the iSCSI portals.
 */
public final class QnapBackend extends BackendHalves {
  /** The CreateVolume parameters this backend takes; any other is refused, naming these. */
  public static final Set<String> PARAMETERS = QnapController.PARAMETERS;

  private static final System.Logger LOG = System.getLogger(QnapBackend.class.getName());

  // A login to a dead portal ends within iscsid's login timeout (15 s by default): one attempt only.
  private static final java.time.Duration ISCSIADM_TIMEOUT = java.time.Duration.ofSeconds(45);
  // After a login: the kernel's scan, udev, and multipathd's map; seconds on a loaded host.
  private static final java.time.Duration DEVICE_WAIT = java.time.Duration.ofSeconds(60);

  /** Asks the appliance at most once at a time, and answers Probe within 4 s whatever it does. */
  private final BoundedReadiness appliance = new BoundedReadiness("the QNAP appliance", this::askAppliance);
  private final QnapApi api;
  private final Optional<Http> http;
  private final String transport;
  private final QnapController controller;
  private final QnapNode node;
  private final String storageCheck;
  private final java.util.concurrent.atomic.AtomicBoolean fencesChecked = new java.util.concurrent.atomic.AtomicBoolean();

  private QnapBackend(QnapApi api, Optional<Http> http, String transport, QnapController controller, QnapNode node,
      String storageCheck) {
    super("qnap", controller, node);
    this.api = api;
    this.node = node;
    this.http = http;
    this.transport = transport;
    this.controller = controller;
    this.storageCheck = storageCheck;
  }

  public static QnapBackend open(BackendConfig backendConfig) {
    return open(backendConfig, System.getenv());
  }

  /**
   * The node half a {@code --driver=qnap} plugin runs, built without an appliance or credentials:
   * logins through iscsid's default interface to {@code portals} only (its {@code qnap.portals}),
   * with the same limits {@link #open} gives its node. The node-side benchmarks measure this.
   */
  public static NodeBackend systemNode(List<String> portals) {
    return new QnapNode(Initiator.system(ISCSIADM_TIMEOUT, Optional.empty()), DEVICE_WAIT, portals,
        dev.caravan.csi.backend.KeyCosts.DEFAULT.luks());
  }

  static QnapBackend open(BackendConfig backendConfig, Map<String, String> env) {
    QnapConfig config = QnapConfig.parse(backendConfig.options());
    Initiator initiator = Initiator.system(ISCSIADM_TIMEOUT, config.iscsiIface());
    logIface(config, initiator);
    QnapNode node = new QnapNode(initiator, DEVICE_WAIT, config.portals(), backendConfig.keyCosts().luks());
    if (config.nodeOnly()) {
      LOG.log(System.Logger.Level.INFO, "qnap: node side only (no qnap.url): no appliance account, controller calls"
          + " refused");
      NoAppliance none = new NoAppliance();
      return new QnapBackend(none, Optional.empty(), "none", new QnapController(none, config, backendConfig.nodeUsage()),
          node, "iscsiadm -m session -P 1; multipathd show paths");
    }
    Credentials credentials = Credentials.load(config.credentialsFile(), env);
    Http http = Http.open(config);
    ApplianceLogin session = new ApplianceLogin(http, credentials, config.loginRetry(), Clock.systemUTC());
    QnapApi api;
    String transport;
    switch (config.transport()) {
      case CGI -> {
        api = new CgiApi(session, config.readyTimeout());
        transport = "cgi";
      }
      case REST -> {
        api = new RestApi(session, config.readyTimeout());
        transport = "rest";
      }
      case AUTO -> {
        CgiApi cgi = new CgiApi(session, config.readyTimeout());
        QnapApi.Appliance a;
        try {
          a = cgi.appliance();
        } catch (CsiException e) {
          cgi.close();
          http.close();
          throw new IllegalStateException("qnap.transport=auto cannot read the appliance's firmware: " + e.getMessage()
              + "; set qnap.transport=cgi or rest to start without the appliance", e);
        }
        api = a.hero() ? new RestApi(session, config.readyTimeout()) : cgi;
        transport = a.hero() ? "rest" : "cgi";
        LOG.log(System.Logger.Level.INFO, "qnap: {0} firmware {1} ({2}): using the {3} API", a.model(), a.firmware(),
            a.hero() ? "QuTS hero" : "QTS", transport);
      }
      default -> throw new IllegalStateException("unreachable");
    }
    return new QnapBackend(api, Optional.of(http), transport,
        new QnapController(api, config, backendConfig.nodeUsage()), node, applianceCheck(config));
  }

  /**
   * One request to the appliance's management URL, as an operator would make it, showing its HTTP
   * status and how long it took: whether the appliance answers at all, errs, or is late.
   */
  private static String applianceCheck(QnapConfig config) {
    String tls = config.insecure() ? " -k" : config.caFile().map(f -> " --cacert " + f).orElse("");
    return "curl -sS" + tls + " -o /dev/null -w '%{http_code} after %{time_total} s\\n' "
        + config.url().map(java.net.URI::toString).orElse("<qnap.url>") + "/";
  }

  private static void logIface(QnapConfig config, Initiator initiator) {
    if (config.iscsiIface().isPresent()) {
      try {
        LOG.log(System.Logger.Level.INFO, "qnap: the node side logs in through iSCSI interface {0} as {1}",
            config.iscsiIface().get(), initiator.initiatorName());
      } catch (dev.caravan.storage.StorageException e) {
        throw new IllegalStateException("qnap.iscsi-iface: " + e.getMessage(), e);
      }
    }
  }

  /**
   * The default evidence, and the provider's attachment record: {@code publishedTo}, the initiators
   * the volume's target admits (the node ids it is ControllerPublished to), read from the appliance.
   * A replacement node whose publish is refused finds here which node holds the volume.
   */
  @Override
  public BackendObject describe(String volumeId) {
    BackendObject base = super.describe(volumeId); // node-only: refused, as every appliance read is
    Map<String, String> properties = new LinkedHashMap<>(base.properties());
    // The device this host has for it: the LUN's multipath map (its WWID from the NAA in the context).
    // An encrypted volume's: its LUKS2 mapping while that is open on the map, shown with its state.
    Optional<VolumeRef> ref = controller.findVolume(volumeId).map(v -> new VolumeRef(volumeId, v.context()));
    Optional<java.nio.file.Path> device = ref.flatMap(node::attachedDevice);
    ref.ifPresent(r -> properties.putAll(node.encryptionEvidence(r)));
    try {
      controller.volumeStatus(volumeId)
          .ifPresent(s -> properties.put("publishedTo", String.join(",", s.attachedNodes())));
      controller.fenceOpen(volumeId).ifPresent(why -> properties.put(BackendObject.FENCE_OPEN, why));
    } catch (CsiException e) {
      properties.put("publishedToError", e.getMessage());
    }
    return new BackendObject(base.kind(), base.location(), base.exists(), properties, base.snapshots(), device);
  }

  /**
   * Caravan's targets on the appliance whose ACL does not fence (their Default Policy admits, or is not
   * shown to deny, initiators the ACL does not list), each with why; read from the appliance now.
   */
  public List<String> openFences() {
    return controller.openFences();
  }

  /**
   * Checks the fence of every Caravan target once, when the appliance first answers after the start,
   * off Probe's path: each open one is logged as a warning (publishes of its volume are refused until
   * it is fixed).
   */
  private void checkFencesOnce() {
    if (!fencesChecked.compareAndSet(false, true)) {
      return;
    }
    Thread.ofVirtual().name("qnap fence check").start(() -> {
      try {
        List<String> open = controller.openFences();
        for (String why : open) {
          LOG.log(System.Logger.Level.WARNING, "qnap: {0}", why);
        }
        LOG.log(System.Logger.Level.INFO, "qnap: fence check at start: {0} Caravan target(s) admit initiators their"
            + " ACL does not list", open.size());
      } catch (CsiException e) {
        LOG.log(System.Logger.Level.WARNING, "qnap: could not check the targets'' Default Policy at start: {0}",
            e.getMessage());
      }
    });
  }

  @Override
  public String storageCheck() {
    return storageCheck;
  }

  @Override
  public Readiness readiness() {
    if (api instanceof NoAppliance) {
      return Readiness.ready("QNAP node side only (no qnap.url): attaches through the iSCSI portals, no appliance API");
    }
    return appliance.get();
  }

  private Readiness askAppliance() {
    try {
      QnapApi.Appliance a = api.appliance();
      checkFencesOnce();
      return Readiness.ready("QNAP " + a.model() + " firmware " + a.firmware() + " over the " + transport + " API");
    } catch (CsiException e) {
      return Readiness.notReady(e.getMessage());
    }
  }

  /** Logs out of the appliance. */
  @Override
  public void close() {
    try {
      api.close();
    } finally {
      http.ifPresent(Http::close);
    }
  }
}
