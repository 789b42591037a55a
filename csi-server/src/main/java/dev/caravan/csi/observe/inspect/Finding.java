package dev.caravan.csi.observe.inspect;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One disagreement between layers, in plain words, with the command an operator would run next.
 *
 * @param code a stable short name for tools and tests (e.g. {@code staging-not-mounted})
 * @param severity error (the volume cannot work as recorded), warning, or info
 */
public record Finding(String code, String severity, String message, String next) {
  public static Finding error(String code, String message, String next) {
    return new Finding(code, "error", message, next);
  }

  public static Finding warning(String code, String message, String next) {
    return new Finding(code, "warning", message, next);
  }

  public static Finding info(String code, String message, String next) {
    return new Finding(code, "info", message, next);
  }

  Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("code", code);
    m.put("severity", severity);
    m.put("message", message);
    m.put("next", next);
    return m;
  }
}
