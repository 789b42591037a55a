package dev.caravan.examples;

import static dev.caravan.examples.ChildJava.location;
import static java.util.stream.Collectors.toSet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeAccessDeniedException;
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
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
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
    ChildJava.Result granted = runProbe(modulePath(both));
    assertThat(granted.exit()).as(granted.output()).isZero();
    assertThat(granted.output()).contains("blkid available: ", "statvfs /: ").doesNotContain("WARNING");

    // Each module makes its own restricted calls: granting the bindings alone is not enough.
    ChildJava.Result bindingsOnly = runProbe(modulePath("--enable-native-access=" + BINDINGS));
    assertThat(bindingsOnly.exit()).as(bindingsOnly.output()).isEqualTo(NativeAccessProbe.DENIED);
    assertThat(bindingsOnly.output())
        .contains("blkid available: ")
        .contains("denied statvfs: " + NativeAccessDeniedException.class.getName())
        .contains("module " + STORAGE + " (--illegal-native-access=deny)")
        .contains("--enable-native-access=" + BINDINGS + "," + STORAGE + " (host-storage is on the module path");
  }

  @Test
  void aDeniedNativeAccessNamesTheFlagToAddOnTheModulePath() throws Exception {
    ChildJava.Result denied =
        runProbe(
            modulePath(
                null,
                NativeAccessProbe.STATVFS,
                NativeAccessProbe.MOUNT,
                NativeAccessProbe.STATVFS,
                NativeAccessProbe.API));

    assertThat(denied.exit()).as(denied.output()).isEqualTo(NativeAccessProbe.DENIED);
    String message =
        NativeAccessDeniedException.class.getName()
            + ": the JVM denies native access to module " + BINDINGS + " and " + STORAGE
            + " (--illegal-native-access=deny): start java with --enable-native-access=" + BINDINGS + "," + STORAGE
            + " (host-storage is on the module path; on the class path it is --enable-native-access=ALL-UNNAMED)";
    // Every call says so, not only the first: no class was left half-initialized.
    assertThat(denied.output().lines().limit(3))
        .containsExactly("denied statvfs: " + message, "denied mount: " + message, "denied statvfs: " + message);
    assertEveryEntryPointRefused(denied.output(), 3);
  }

  @Test
  void aDeniedNativeAccessNamesTheFlagToAddOnTheClassPath() throws Exception {
    List<String> classPath =
        List.of(
            "-cp",
            String.join(
                File.pathSeparator,
                STORAGE_LOCATION.toString(),
                BINDINGS_LOCATION.toString(),
                location(NativeAccessProbe.class).toString()),
            NativeAccessProbe.class.getName(),
            NativeAccessProbe.STATVFS,
            NativeAccessProbe.MOUNT,
            NativeAccessProbe.API);

    ChildJava.Result denied = runProbe(classPath);

    assertThat(denied.exit()).as(denied.output()).isEqualTo(NativeAccessProbe.DENIED);
    String message =
        NativeAccessDeniedException.class.getName()
            + ": the JVM denies native access to host-storage (--illegal-native-access=deny): start java with"
            + " --enable-native-access=ALL-UNNAMED (host-storage is on the class path; on the module path it is"
            + " --enable-native-access=" + BINDINGS + "," + STORAGE + ")";
    assertThat(denied.output().lines().limit(2))
        .containsExactly("denied statvfs: " + message, "denied mount: " + message);
    assertEveryEntryPointRefused(denied.output(), 2);
  }

  /**
   * After the first {@code skip} lines, the probe's {@link NativeAccessProbe#API} step: every entry
   * point of the block, file, fs and mount classes that reach native code refused, none let through.
   */
  private static void assertEveryEntryPointRefused(String output, int skip) {
    List<String> rest = output.lines().skip(skip).toList();
    assertThat(rest).as(output).hasSize(1);
    assertThat(rest.getFirst()).startsWith(NativeAccessProbe.REFUSED);
    assertThat(Integer.parseInt(rest.getFirst().substring(NativeAccessProbe.REFUSED.length())))
        .as("entry points refused")
        .isGreaterThan(40);
  }

  /**
   * The probe with host-storage and the bindings on the module path; {@code nativeAccess} (an
   * {@code --enable-native-access} flag, or null for none) lists the modules granted it.
   */
  private static List<String> modulePath(String nativeAccess, String... probeArguments) {
    List<String> arguments = new ArrayList<>();
    if (nativeAccess != null) {
      arguments.add(nativeAccess);
    }
    arguments.addAll(
        List.of(
            "--module-path",
            STORAGE_LOCATION + File.pathSeparator + BINDINGS_LOCATION,
            "--add-modules",
            STORAGE,
            "-cp",
            location(NativeAccessProbe.class).toString(),
            NativeAccessProbe.class.getName()));
    arguments.addAll(List.of(probeArguments));
    return arguments;
  }

  /** Runs java with {@code arguments} in a JVM that denies native access to what they do not grant it. */
  private static ChildJava.Result runProbe(List<String> arguments) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("--illegal-native-access=deny"));
    command.addAll(arguments);
    return ChildJava.run(command);
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
}
