package dev.caravan.csi.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.observe.Observability;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.inspect.PeerNodes;
import dev.caravan.csi.observe.metrics.MetricsInterceptor;
import dev.caravan.storage.testing.Floors;
import org.junit.jupiter.api.Test;

/** The floors of csi-server (docs/layers.md): every arrow between packages points down. */
class LayersArchTest {
  private static final JavaClasses classes = Floors.mainClassesOf(Plugin.class);

  @Test
  void packagesFormNoCycle() {
    Floors.noPackageCycle().check(classes);
  }

  @Test
  void everyArrowPointsDown() {
    layeredArchitecture()
        .consideringOnlyDependenciesInLayers()
        .layer("foundation").definedBy("dev.caravan.csi.config", "dev.caravan.csi.support",
            "dev.caravan.csi.v1", "dev.caravan.csi.peer.v1")
        .layer("backend api").definedBy("dev.caravan.csi.backend")
        .layer("node and backends").definedBy("dev.caravan.csi.node", "dev.caravan.csi.backend.file",
            "dev.caravan.csi.backend.local", "dev.caravan.csi.backend.qnap")
        .layer("observe parts").definedBy("dev.caravan.csi.observe.nomad", "dev.caravan.csi.observe.stats",
            "dev.caravan.csi.observe.metrics", "dev.caravan.csi.observe.inspect",
            "dev.caravan.csi.observe.http")
        .layer("services").definedBy("dev.caravan.csi.server", "dev.caravan.csi.service",
            "dev.caravan.csi.peer", "dev.caravan.csi.iscsi", "dev.caravan.csi.dhv",
            "dev.caravan.csi.drivers", "dev.caravan.csi.observe")
        .layer("entry points").definedBy("dev.caravan.csi", "dev.caravan.csi.cli")
        .whereLayer("entry points").mayNotBeAccessedByAnyLayer()
        .whereLayer("services").mayOnlyBeAccessedByLayers("entry points")
        .whereLayer("observe parts").mayOnlyBeAccessedByLayers("services", "entry points")
        .whereLayer("node and backends")
        .mayOnlyBeAccessedByLayers("observe parts", "services", "entry points")
        .whereLayer("backend api")
        .mayOnlyBeAccessedByLayers("node and backends", "observe parts", "services", "entry points")
        .because("each floor builds only on the floors below it (docs/layers.md), so a backend or"
            + " the node engine can be understood and tested without the server, peers or CLI above")
        .check(classes);
  }

  @Test
  void grpcAndProtobufStayAtTheWire() {
    noClasses()
        .that().resideOutsideOfPackages("dev.caravan.csi.server", "dev.caravan.csi.service",
            "dev.caravan.csi.peer..", "dev.caravan.csi.v1..")
        // Plugin starts the gRPC server with the services; DemoCommand and UnixChannel are gRPC
        // clients of the plugin's own socket; MetricsInterceptor (handed to the server by
        // Observability) times each RPC as a gRPC ServerInterceptor; the inspector's peer layer asks
        // other nodes for their layers over the peer protocol and reads its answer message.
        .and().doNotBelongToAnyOf(Plugin.class, UnixChannel.class,
            Observability.class, MetricsInterceptor.class, PeerNodes.class, ChainInspector.class)
        .and().haveNameNotMatching(
            "dev\\.caravan\\.csi\\.(cli\\.DemoCommand|observe\\.inspect\\.PeerLayer)(\\$.*)?")
        .should().dependOnClassesThat().resideInAnyPackage("io.grpc..", "com.google.protobuf..",
            "dev.caravan.csi.v1..", "dev.caravan.csi.peer.v1..")
        .because("backends, the node engine and the observe API speak Java types and CsiException;"
            + " only the service and peer floors translate them to and from the wire")
        .check(classes);
  }

  @Test
  void noForeignMemory() {
    noClasses()
        .should().dependOnClassesThat().resideInAPackage("java.lang.foreign..")
        .because("native memory is handled in bindings and host-storage's internal packages, where"
            + " its lifetimes are checked; csi-server calls host-storage's Java API")
        .check(classes);
  }
}
