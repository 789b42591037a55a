package dev.caravan.examples;

import static java.util.stream.Collectors.toSet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.Mounts;
import java.io.File;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleDescriptor.Exports;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReader;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * host-storage and the bindings as a JVM agent sees them with both on its module path: a layer made
 * from the built modules (the jars, or the class directories when Maven stops before packaging),
 * seen from this test's unnamed module, as any other code outside them.
 */
class ModuleEncapsulationTest {
  private static final String STORAGE = "dev.caravan.storage";
  private static final String BINDINGS = "dev.caravan.bindings";
  private static final Path STORAGE_LOCATION = location(StorageException.class);
  private static final Path BINDINGS_LOCATION = location(NativeLibraries.class);

  private static ModuleLayer layer;

  @BeforeAll
  static void defineLayer() {
    Configuration configuration =
        ModuleLayer.boot()
            .configuration()
            .resolve(ModuleFinder.of(STORAGE_LOCATION, BINDINGS_LOCATION), ModuleFinder.of(), Set.of(STORAGE));
    layer = ModuleLayer.boot().defineModulesWithOneLoader(configuration, ClassLoader.getPlatformClassLoader());
  }

  @Test
  void hostStorageExportsEveryPackageButTheInternalOnesToEveryone() {
    ModuleDescriptor storage = module(STORAGE).getDescriptor();
    Set<String> internal =
        storage.packages().stream().filter(p -> p.startsWith(STORAGE + ".internal")).collect(toSet());

    assertThat(internal).as("the packages the rule hides").contains(STORAGE + ".internal.sys");
    assertThat(storage.exports()).allSatisfy(e -> assertThat(e.isQualified()).as(e.source()).isFalse());
    assertThat(storage.exports().stream().map(Exports::source).collect(toSet()))
        .isEqualTo(storage.packages().stream().filter(p -> !internal.contains(p)).collect(toSet()))
        .contains(packagesOf(LoopDevices.class, Probe.class, SparseFiles.class, Filesystems.class, Mounts.class));
    assertThat(storage.isOpen()).isFalse();
    assertThat(storage.opens()).isEmpty();
  }

  @Test
  void theBindingsExportNativeLibrariesToEveryoneAndTheGeneratedPackagesOnlyToHostStorage() {
    ModuleDescriptor bindings = module(BINDINGS).getDescriptor();
    Set<String> generated =
        bindings.packages().stream().filter(p -> !p.equals(BINDINGS)).collect(toSet());

    assertThat(generated).contains(BINDINGS + ".blkid", BINDINGS + ".zfs", BINDINGS + ".linux", BINDINGS + ".iscsi");
    assertThat(bindings.exports())
        .filteredOn(e -> !e.isQualified())
        .extracting(Exports::source)
        .containsExactly(BINDINGS);
    assertThat(bindings.exports())
        .filteredOn(Exports::isQualified)
        .allSatisfy(e -> assertThat(e.targets()).as(e.source()).containsExactly(STORAGE))
        .extracting(Exports::source)
        .containsExactlyInAnyOrderElementsOf(generated);
    // host-storage's readers get NativeLibraries too: it names the library a feature lacks.
    assertThat(module(STORAGE).getDescriptor().requires())
        .anySatisfy(r -> {
          assertThat(r.name()).isEqualTo(BINDINGS);
          assertThat(r.modifiers()).contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE);
        });
  }

  @Test
  void fromOutsideThePublicClassesOfTheInternalPackagesCannotBeReached() throws Exception {
    Module storage = module(STORAGE);
    List<Class<?>> hidden = publicClassesUnder(storage, STORAGE + ".internal");
    assertThat(hidden).as("public classes under internal").isNotEmpty();

    MethodHandles.Lookup outside = MethodHandles.publicLookup();
    for (Class<?> c : hidden) {
      assertThat(storage.isExported(c.getPackageName())).as(c.getName()).isFalse();
      assertThatThrownBy(() -> outside.accessClass(c)).as(c.getName()).isInstanceOf(IllegalAccessException.class);
      Method[] methods = c.getMethods();
      if (methods.length > 0) {
        assertThatThrownBy(() -> methods[0].setAccessible(true))
            .as(c.getName())
            .isInstanceOf(InaccessibleObjectException.class);
      }
    }
    // The API next to them is reachable: the check above is about the package, not the layer.
    assertThat(outside.accessClass(layer.findLoader(STORAGE).loadClass(LoopDevices.class.getName())))
        .isNotNull();
  }

  @Test
  void theGeneratedBindingsAreReadableByHostStorageOnly() throws Exception {
    Module bindings = module(BINDINGS);
    Class<?> blkid = layer.findLoader(BINDINGS).loadClass(BINDINGS + ".blkid.Blkid");

    assertThat(bindings.isExported(BINDINGS + ".blkid", module(STORAGE))).isTrue();
    assertThat(bindings.isExported(BINDINGS + ".blkid")).isFalse();
    assertThatThrownBy(() -> MethodHandles.publicLookup().accessClass(blkid))
        .isInstanceOf(IllegalAccessException.class);
  }

  @Test
  void onTheModulePathNativeAccessIsGrantedToBothModulesByName() throws Exception {
    String both = "--enable-native-access=" + BINDINGS + "," + STORAGE;
    Result granted = runProbe(both);
    assertThat(granted.exit()).as(granted.output()).isZero();
    assertThat(granted.output()).contains("blkid available: ", "statvfs /: ").doesNotContain("WARNING");

    // Each module makes its own restricted calls: granting the bindings alone is not enough.
    Result bindingsOnly = runProbe("--enable-native-access=" + BINDINGS);
    assertThat(bindingsOnly.exit()).as(bindingsOnly.output()).isNotZero();
    assertThat(bindingsOnly.output()).contains("IllegalCallerException", "module " + STORAGE);
  }

  private record Result(int exit, String output) {}

  /** The probe with host-storage and the bindings on the module path and unlisted native access denied. */
  private static Result runProbe(String nativeAccess) throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> command =
        new ArrayList<>(
            List.of(
                java.toString(),
                "-XX:TieredStopAtLevel=1",
                "--illegal-native-access=deny",
                nativeAccess,
                "--module-path",
                STORAGE_LOCATION + File.pathSeparator + BINDINGS_LOCATION,
                "--add-modules",
                STORAGE,
                "-cp",
                location(NativeAccessProbe.class).toString(),
                NativeAccessProbe.class.getName()));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).as(output).isTrue();
    return new Result(process.exitValue(), output);
  }

  private static Module module(String name) {
    return layer.findModule(name).orElseThrow();
  }

  private static List<Class<?>> publicClassesUnder(Module module, String packagePrefix)
      throws IOException, ClassNotFoundException {
    List<String> names;
    try (ModuleReader reader =
            layer.configuration().findModule(module.getName()).orElseThrow().reference().open();
        Stream<String> entries = reader.list()) {
      String prefix = packagePrefix.replace('.', '/') + "/";
      names =
          entries
              .filter(e -> e.startsWith(prefix) && e.endsWith(".class") && !e.contains("$"))
              .map(e -> e.substring(0, e.length() - ".class".length()).replace('/', '.'))
              .toList();
    }
    List<Class<?>> classes = new ArrayList<>();
    for (String name : names) {
      Class<?> c = Class.forName(name, false, module.getClassLoader());
      if (Modifier.isPublic(c.getModifiers())) {
        classes.add(c);
      }
    }
    return classes;
  }

  private static String[] packagesOf(Class<?>... classes) {
    return Stream.of(classes).map(Class::getPackageName).toArray(String[]::new);
  }

  private static Path location(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException("the location of " + c, e);
    }
  }
}
