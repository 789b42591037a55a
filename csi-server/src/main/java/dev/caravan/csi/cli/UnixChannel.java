package dev.caravan.csi.cli;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A gRPC client channel to a CSI plugin's unix socket (Netty epoll), as a CO would open it. */
public final class UnixChannel implements AutoCloseable {
  private final EventLoopGroup group;
  private final ManagedChannel channel;

  public UnixChannel(Path socket) {
    this.group = new EpollEventLoopGroup(1);
    this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(group)
        .overrideAuthority("localhost")
        .usePlaintext()
        .build();
  }

  public ManagedChannel channel() {
    return channel;
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    boolean stopped = group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
    if (!stopped) {
      System.getLogger(UnixChannel.class.getName()).log(System.Logger.Level.WARNING, "client event loop still running");
    }
  }
}
