package dev.caravan.csi.scenario;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsProvider;

/**
 * The filesystems the node suite's growth tests run on: ext4 and xfs, unless the backend's test class
 * names fewer with {@link On}. Where the device side of a growth is the backend's own and the
 * filesystem side is the one host-storage already grows on every other backend, one filesystem proves
 * the device side; each more is another guest minute where the backend lives in the guest.
 */
final class GrowthFilesystems implements ArgumentsProvider {
  static final String[] ALL = {"ext4", "xfs"};

  /** The filesystems a backend's node suite grows, when not all of {@link #ALL}. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.TYPE)
  @interface On {
    String[] value();
  }

  @Override
  public Stream<? extends Arguments> provideArguments(ExtensionContext context) {
    On on = context.getRequiredTestClass().getAnnotation(On.class);
    return Arrays.stream(on == null ? ALL : on.value()).map(Arguments::of);
  }
}
