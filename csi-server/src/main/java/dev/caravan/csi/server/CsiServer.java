package dev.caravan.csi.server;

import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The gRPC server on a unix domain socket (Netty epoll). Startup replaces a stale socket file but
 * refuses to steal a live one; {@link #shutdown(Duration)} drains in-flight calls for a bounded time
 * and removes the socket.
 */
public final class CsiServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(CsiServer.class.getName());

  /**
   * Probe and NodeGetVolumeStats: to be run on the event loop ({@link #start(Path, List, List, Set)})
   * when the backend's readiness and health checks never wait ({@code Backend#answersWithoutWaiting}).
   */
  public static final Set<String> STORAGE_READS = Set.of(
      IdentityGrpc.getProbeMethod().getFullMethodName(), NodeGrpc.getNodeGetVolumeStatsMethod().getFullMethodName());

  private final Server server;
  private final Path socket;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final RpcExecutors executors;
  private final RpcLog log;

  private CsiServer(Server server, Path socket, EventLoopGroup boss, EventLoopGroup workers, RpcExecutors executors,
      RpcLog log) {
    this.server = server;
    this.socket = socket;
    this.boss = boss;
    this.workers = workers;
    this.executors = executors;
    this.log = log;
  }

  /** Binds {@code socket} and starts serving the given services behind the standard interceptors. */
  public static CsiServer start(Path socket, List<BindableService> services) throws IOException {
    return start(socket, services, List.of());
  }

  /**
   * As {@link #start(Path, List)}, with {@code outer} interceptors around the standard ones (the
   * first listed runs first), e.g. metrics.
   */
  public static CsiServer start(Path socket, List<BindableService> services, List<ServerInterceptor> outer)
      throws IOException {
    return start(socket, services, outer, Set.of());
  }

  /**
   * As {@link #start(Path, List, List)}, running the calls named in {@code inline} (full method names,
   * {@code csi.v1.Identity/Probe}) on the event loop that reads them: only calls that never wait for a
   * disk, a network or another process (see {@link RpcExecutors}).
   */
  public static CsiServer start(Path socket, List<BindableService> services, List<ServerInterceptor> outer,
      Set<String> inline) throws IOException {
    if (!Epoll.isAvailable()) {
      throw new IOException("Netty epoll transport unavailable: " + Epoll.unavailabilityCause());
    }
    prepareSocketPath(socket);
    // Bound first in a directory only the owner can enter, made owner-only there, then renamed into
    // place: the socket's mode never depends on the umask, and no one can connect in between.
    Path hideout = Files.createTempDirectory(socket.getParent(), ".s",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Path bound = hideout.resolve("s");
    EventLoopGroup boss = new EpollEventLoopGroup(1);
    EventLoopGroup workers = new EpollEventLoopGroup(2);
    RpcExecutors executors = new RpcExecutors(inline);
    RpcLog log = RpcLog.start(workers);
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(new DomainSocketAddress(bound.toString()))
            .channelType(EpollServerDomainSocketChannel.class)
            .bossEventLoopGroup(boss)
            .workerEventLoopGroup(workers)
            // Every call starts on the event loop; RpcExecutors, outermost, hands its handler to a pool
            .executor(RpcExecutors.INLINE);
    ErrorInterceptor errors = new ErrorInterceptor();
    CallLogInterceptor lines = new CallLogInterceptor(log);
    for (BindableService service : services) {
      // Interceptors run last-added-first: the error guard sits innermost, then the log line, the
      // outer ones, and the hand-off to a pool thread outermost.
      List<ServerInterceptor> chain = new ArrayList<>(List.of(errors, lines));
      chain.addAll(outer.reversed());
      chain.add(executors);
      builder.addService(ServerInterceptors.intercept(service, chain));
    }
    Server server = builder.build();
    try {
      server.start();
      Files.setPosixFilePermissions(bound, PosixFilePermissions.fromString("rw-------"));
      Files.move(bound, socket, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException | RuntimeException e) {
      server.shutdownNow();
      stopLoops(boss, workers);
      executors.shutdownNow();
      log.close();
      throw e;
    } finally {
      Files.deleteIfExists(bound);
      Files.deleteIfExists(hideout);
    }
    LOG.log(System.Logger.Level.INFO, "listening on unix://{0}", socket);
    return new CsiServer(server, socket, boss, workers, executors, log);
  }

  /**
   * Makes {@code socket} bindable: creates its directory; an existing socket file nobody answers on
   * is removed (left over from a crash); a socket someone answers on is an error; anything else at
   * that path is never touched.
   */
  static void prepareSocketPath(Path socket) throws IOException {
    Path parent = socket.getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    PosixFileAttributes attrs =
        Files.readAttributes(socket, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (!attrs.isOther()) {
      throw new IOException(
          socket + " exists and is not a socket; refusing to replace it (remove it yourself if it is stale)");
    }
    if (isLive(socket)) {
      throw new IOException(
          "another process is already serving on " + socket + "; stop it first (refusing to replace a live socket)");
    }
    LOG.log(System.Logger.Level.INFO, "removing stale socket {0}", socket);
    Files.delete(socket);
  }

  /** Whether something accepts connections on the unix socket at {@code socket}. */
  public static boolean isLive(Path socket) {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  public Path socket() {
    return socket;
  }

  /** Blocks until the server has terminated. */
  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  /**
   * Stops accepting calls, lets in-flight calls finish for up to {@code grace}, cancels the rest,
   * and removes the socket file.
   */
  public void shutdown(Duration grace) {
    long deadline = System.nanoTime() + grace.toNanos();
    server.shutdown();
    try {
      if (!server.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "calls still running after {0}; cancelling them", grace);
        server.shutdownNow();
        server.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    } finally {
      executors.stop(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      stopLoops(boss, workers);
      log.close(); // writes the lines still queued
      try {
        Files.deleteIfExists(socket);
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "could not remove socket " + socket, e);
      }
    }
  }

  private static void stopLoops(EventLoopGroup... groups) {
    for (EventLoopGroup g : groups) {
      boolean stopped = g.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
      if (!stopped) {
        LOG.log(System.Logger.Level.WARNING, "event loop did not stop within 2s");
      }
    }
  }

  @Override
  public void close() {
    shutdown(Duration.ofSeconds(5));
  }
}
