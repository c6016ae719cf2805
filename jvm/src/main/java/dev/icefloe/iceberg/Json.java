package dev.icefloe.iceberg;

import java.util.ArrayList;
import java.util.List;

/** The little JSON a read record holds: arrays of strings and arrays (no library needed). */
final class Json {
  private Json() {}

  static String string(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static List<String> strings(List<String> values) {
    List<String> out = new ArrayList<>(values.size());
    for (String v : values) {
      out.add(string(v));
    }
    return out;
  }

  /** An array of values already JSON. */
  static String array(List<String> json) {
    return "[" + String.join(",", json) + "]";
  }
}
