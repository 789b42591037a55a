package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;
import org.xml.sax.SAXException;

/**
 * The CGI API's XML answers. Some answers are several top-level elements with no root, so the body
 * is wrapped in a synthetic one; values are often CDATA and may hold stray whitespace (IQNs with
 * embedded newlines), so text is read trimmed. No DTDs, no external entities.
 */
final class Xml {
  private Xml() {}

  static Element parse(String body, String what) {
    String text = body.strip();
    if (text.startsWith("<?xml")) {
      int end = text.indexOf("?>");
      text = end < 0 ? text : text.substring(end + 2);
    }
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
      f.setExpandEntityReferences(false);
      f.setXIncludeAware(false);
      DocumentBuilder b = f.newDocumentBuilder();
      return b.parse(new InputSource(new StringReader("<caravan-wrap>" + text + "</caravan-wrap>"))).getDocumentElement();
    } catch (ParserConfigurationException | SAXException | IOException e) {
      throw new CsiException(CsiException.Kind.UNAVAILABLE,
          "QNAP appliance answered " + what + " with something that is not its XML: " + e.getMessage(), e);
    }
  }

  /** The first descendant element named {@code name}, depth first. */
  static Optional<Element> first(Element e, String name) {
    NodeList list = e.getElementsByTagName(name);
    return list.getLength() == 0 ? Optional.empty() : Optional.of((Element) list.item(0));
  }

  /** Every descendant element named {@code name}, in document order. */
  static List<Element> all(Element e, String name) {
    NodeList list = e.getElementsByTagName(name);
    List<Element> out = new ArrayList<>();
    for (int i = 0; i < list.getLength(); i++) {
      out.add((Element) list.item(i));
    }
    return out;
  }

  /** Direct children named {@code name}. */
  static List<Element> children(Element e, String name) {
    List<Element> out = new ArrayList<>();
    for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && c.getTagName().equals(name)) {
        out.add(c);
      }
    }
    return out;
  }

  /** The trimmed text of the first descendant named {@code name}. */
  static Optional<String> text(Element e, String name) {
    return first(e, name).map(x -> x.getTextContent().strip());
  }

  static String text(Element e, String name, String dflt) {
    return text(e, name).orElse(dflt);
  }

  /** Text with every whitespace character removed (IQNs, NAAs). */
  static String compact(Element e, String name) {
    return text(e, name, "").replaceAll("\\s+", "");
  }

  static long number(Element e, String name, long dflt) {
    String t = text(e, name, "");
    try {
      return t.isEmpty() ? dflt : Long.parseLong(t);
    } catch (NumberFormatException ex) {
      return dflt;
    }
  }
}
