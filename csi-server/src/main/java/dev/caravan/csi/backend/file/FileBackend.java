package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.Readiness;
import java.nio.file.Files;
import java.nio.file.Path;

/** The {@code file} backend: sparse files under a data directory, attached through loop devices. */
public final class FileBackend implements Backend {
  public static final Path DEFAULT_DATA_DIR = Path.of("/var/lib/caravan/file");

  private final FileStore store;
  private final FileController controller;
  private final FileNode node;

  private FileBackend(FileStore store, String nodeId) {
    this.store = store;
    this.controller = new FileController(store, nodeId);
    this.node = new FileNode(store);
  }

  public static FileBackend open(BackendConfig config) {
    return new FileBackend(new FileStore(config.dataDir()), config.nodeId());
  }

  @Override
  public String driver() {
    return "file";
  }

  @Override
  public ControllerBackend controller() {
    return controller;
  }

  @Override
  public NodeBackend node() {
    return node;
  }

  @Override
  public Readiness readiness() {
    if (!Files.isDirectory(store.dataDir()) || !Files.isWritable(store.dataDir())) {
      return Readiness.notReady("data directory " + store.dataDir() + " is missing or not writable");
    }
    if (!Files.exists(Path.of("/dev/loop-control"))) {
      return Readiness.notReady("/dev/loop-control is missing: no loop device support");
    }
    return Readiness.ready("data directory " + store.dataDir());
  }
}
