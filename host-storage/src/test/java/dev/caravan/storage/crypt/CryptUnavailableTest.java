package dev.caravan.storage.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.testing.HostRequirements;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** On a kernel without dm-crypt, every mapping operation is refused with the reason. */
class CryptUnavailableTest {
  private static final byte[] PASSPHRASE = "p4ss".getBytes(StandardCharsets.UTF_8);

  @BeforeEach
  void requireAKernelWithoutDmCrypt() {
    HostRequirements.assumeNoDmCrypt();
  }

  @Test
  void theReasonIsTheCapabilityHelpersOne() {
    String why = HostCapabilities.current().dmCryptProblem().orElseThrow();
    assertThat(Luks2.unavailableReason()).contains(why);
  }

  @Test
  void openCloseResizeAndStatusAreRefusedNamingWhy() {
    String why = HostCapabilities.current().dmCryptProblem().orElseThrow();
    String name = Luks2.mappingName("vol");
    for (Runnable call :
        new Runnable[] {
          () -> Luks2.open(Path.of("/dev/null"), name, PASSPHRASE),
          () -> Luks2.close(name),
          () -> Luks2.resize(name, PASSPHRASE),
          () -> Luks2.status(name)
        }) {
      assertThatThrownBy(call::run)
          .isInstanceOf(CryptUnavailableException.class)
          .hasMessage("LUKS2 is not usable on this host: " + why);
    }
  }
}
