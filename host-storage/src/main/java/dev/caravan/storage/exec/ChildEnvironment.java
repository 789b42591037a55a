package dev.caravan.storage.exec;

import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The environment a tool is started with: ours, without the variables that hold secrets. The plugin
 * is given its appliance credentials ({@code CARAVAN_QNAP_USER}, {@code CARAVAN_QNAP_PASSWORD}) and
 * Nomad's token ({@code NOMAD_TOKEN}) through its environment; no tool it runs needs them, and a
 * process's environment is readable through /proc by whoever may read its memory, and is handed on to
 * every process the tool starts in turn.
 */
final class ChildEnvironment {
  /** Named outright: the secrets Caravan itself reads from its environment. */
  private static final java.util.Set<String> SECRETS =
      java.util.Set.of("CARAVAN_QNAP_USER", "CARAVAN_QNAP_PASSWORD", "NOMAD_TOKEN");

  /** By their names' shape: any other credential an operator's template may have put there. */
  private static final Pattern SECRET_LIKE =
      Pattern.compile(".*(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY).*");

  private ChildEnvironment() {}

  static Map<String, String> of(Map<String, String> parent) {
    return parent.entrySet().stream()
        .filter(e -> !isSecret(e.getKey()))
        .collect(Collectors.toUnmodifiableMap(Map.Entry::getKey, Map.Entry::getValue));
  }

  static boolean isSecret(String name) {
    return SECRETS.contains(name) || SECRET_LIKE.matcher(name.toUpperCase(Locale.ROOT)).matches();
  }
}
