package dev.caravan.storage.internal.iscsi;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.iscsi.OpenIscsiUsr;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.StorageException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads iSCSI sessions and node records through libopeniscsiusr, the library open-iscsi ships for
 * exactly this (it reads sysfs and the node database itself, as iscsiadm does).
 *
 * <p>The session getters come from the generated bindings. The node getters and {@code
 * iscsi_session_tpgt_get} are bound here by hand, because the committed bindings predate them and
 * regenerating needs jextract, which no Debian package ships; their C signatures are those of
 * {@code libopeniscsiusr_node.h} and {@code libopeniscsiusr_session.h} in open-iscsi 2.1.8, and all
 * take or return only pointers and 32-bit integers.
 */
public final class OpenIscsi {
  private static final Path SESSIONS_DIR = Path.of("/sys/class/iscsi_session");
  private static final Path NODES_DIR = Path.of("/etc/iscsi/nodes");

  /** A session as libopeniscsiusr reports it. */
  public record SessionInfo(
      int sid,
      String targetName,
      String address,
      int port,
      String persistentAddress,
      int persistentPort,
      int tpgt,
      String iface) {}

  /** A node record (target, portal, iface) as libopeniscsiusr reads it from the node database. */
  public record NodeInfo(String targetName, String address, int port, int tpgt, String iface) {}

  private OpenIscsi() {}

  /** Every iSCSI session the kernel has, in sid order. */
  public static List<SessionInfo> sessions() {
    requireLibrary();
    if (!Files.isDirectory(SESSIONS_DIR)) {
      return List.of(); // the iSCSI transport class is not even loaded: no session can exist
    }
    MemorySegment ctx = newContext();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment list = arena.allocate(ADDRESS);
      MemorySegment count = arena.allocate(JAVA_INT);
      int rc = OpenIscsiUsr.iscsi_sessions_get(ctx, list, count);
      if (rc == OpenIscsiUsr.LIBISCSI_ERR_SESS_NOT_FOUND()) {
        return List.of();
      }
      check(rc, "iscsi_sessions_get");
      int n = count.get(JAVA_INT, 0);
      MemorySegment array = list.get(ADDRESS, 0).reinterpret(ADDRESS.byteSize() * n);
      try {
        List<SessionInfo> sessions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          MemorySegment se = array.getAtIndex(ADDRESS, i);
          sessions.add(
              new SessionInfo(
                  OpenIscsiUsr.iscsi_session_sid_get(se),
                  string(OpenIscsiUsr.iscsi_session_target_name_get(se)),
                  string(OpenIscsiUsr.iscsi_session_address_get(se)),
                  OpenIscsiUsr.iscsi_session_port_get(se),
                  string(OpenIscsiUsr.iscsi_session_persistent_address_get(se)),
                  OpenIscsiUsr.iscsi_session_persistent_port_get(se),
                  (int) Hand.SESSION_TPGT.invokeExact(se),
                  string(
                      OpenIscsiUsr.iscsi_iface_name_get(OpenIscsiUsr.iscsi_session_iface_get(se)))));
        }
        sessions.sort(java.util.Comparator.comparingInt(SessionInfo::sid));
        return List.copyOf(sessions);
      } catch (Throwable t) {
        throw rethrow(t);
      } finally {
        OpenIscsiUsr.iscsi_sessions_free(array, n);
      }
    } finally {
      OpenIscsiUsr.iscsi_context_free(ctx);
    }
  }

  /** Every node record in the node database ({@code /etc/iscsi/nodes}). */
  public static List<NodeInfo> nodes() {
    requireLibrary();
    if (!Files.isDirectory(NODES_DIR)) {
      return List.of();
    }
    MemorySegment ctx = newContext();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment list = arena.allocate(ADDRESS);
      MemorySegment count = arena.allocate(JAVA_INT);
      int rc = (int) Hand.NODES_GET.invokeExact(ctx, list, count);
      check(rc, "iscsi_nodes_get");
      int n = count.get(JAVA_INT, 0);
      MemorySegment array = list.get(ADDRESS, 0).reinterpret(ADDRESS.byteSize() * n);
      try {
        List<NodeInfo> nodes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          MemorySegment node = array.getAtIndex(ADDRESS, i);
          nodes.add(
              new NodeInfo(
                  string((MemorySegment) Hand.NODE_TARGET.invokeExact(node)),
                  string((MemorySegment) Hand.NODE_ADDRESS.invokeExact(node)),
                  (int) Hand.NODE_PORT.invokeExact(node),
                  (int) Hand.NODE_TPGT.invokeExact(node),
                  string((MemorySegment) Hand.NODE_IFACE.invokeExact(node))));
        }
        return List.copyOf(nodes);
      } finally {
        Hand.NODES_FREE.invokeExact(array, n);
      }
    } catch (Throwable t) {
      throw rethrow(t);
    } finally {
      OpenIscsiUsr.iscsi_context_free(ctx);
    }
  }

  private static MemorySegment newContext() {
    MemorySegment ctx = OpenIscsiUsr.iscsi_context_new();
    if (ctx.equals(MemorySegment.NULL)) {
      throw new StorageException("iscsi_context_new failed (out of memory)");
    }
    // The library logs to stderr at its default priority; errors come back as return codes.
    OpenIscsiUsr.iscsi_context_log_priority_set(ctx, OpenIscsiUsr.LIBISCSI_LOG_PRIORITY_ERROR());
    return ctx;
  }

  private static void requireLibrary() {
    if (!NativeLibraries.isAvailable(Library.OPEN_ISCSI_USR)) {
      throw new NativeLibraryUnavailableException(
          NativeLibraries.status(Library.OPEN_ISCSI_USR).problem().orElse("libopeniscsiusr"));
    }
  }

  private static void check(int rc, String function) {
    if (rc != OpenIscsiUsr.LIBISCSI_OK()) {
      throw new StorageException(
          function + " failed: " + string(OpenIscsiUsr.iscsi_strerror(rc)) + " (" + rc + ")");
    }
  }

  private static String string(MemorySegment cString) {
    return cString.equals(MemorySegment.NULL) ? "" : cString.reinterpret(4096).getString(0);
  }

  private static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException e) {
      throw e;
    }
    if (t instanceof Error e) {
      throw e;
    }
    throw new AssertionError("a downcall threw a checked exception", t);
  }

  /** Downcalls the generated bindings lack (see the class comment). */
  private static final class Hand {
    private static final Linker LINKER = Linker.nativeLinker();
    // The generated class has opened the library by now (requireLibrary); this finds the same one.
    private static final SymbolLookup LIBRARY =
        SymbolLookup.libraryLookup("libopeniscsiusr.so.0", Arena.global());

    static final MethodHandle SESSION_TPGT = handle("iscsi_session_tpgt_get", JAVA_INT, ADDRESS);
    static final MethodHandle NODES_GET =
        handle("iscsi_nodes_get", JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    static final MethodHandle NODES_FREE =
        LINKER.downcallHandle(
            LIBRARY.findOrThrow("iscsi_nodes_free"), FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
    static final MethodHandle NODE_TARGET = handle("iscsi_node_target_name_get", ADDRESS, ADDRESS);
    static final MethodHandle NODE_ADDRESS = handle("iscsi_node_conn_address_get", ADDRESS, ADDRESS);
    static final MethodHandle NODE_PORT = handle("iscsi_node_conn_port_get", JAVA_INT, ADDRESS);
    static final MethodHandle NODE_TPGT = handle("iscsi_node_tpgt_get", JAVA_INT, ADDRESS);
    static final MethodHandle NODE_IFACE = handle("iscsi_node_iface_name_get", ADDRESS, ADDRESS);

    private static MethodHandle handle(
        String name, java.lang.foreign.MemoryLayout result, java.lang.foreign.MemoryLayout... args) {
      return LINKER.downcallHandle(LIBRARY.findOrThrow(name), FunctionDescriptor.of(result, args));
    }
  }
}
