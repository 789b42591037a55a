package dev.caravan.csi.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A call's callbacks, handed to a shared pool from several threads, still run one at a time and in order. */
class SerialExecutorTest {
  @Test
  void tasksRunOneAtATimeInTheOrderEachThreadGaveThem() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    ExecutorService submitters = Executors.newFixedThreadPool(3);
    try {
      SerialExecutor serial = new SerialExecutor(pool);
      AtomicInteger running = new AtomicInteger();
      AtomicInteger overlaps = new AtomicInteger();
      int perThread = 20_000;
      List<List<Integer>> seen = new ArrayList<>();
      CountDownLatch done = new CountDownLatch(3 * perThread);
      for (int t = 0; t < 3; t++) {
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        seen.add(order);
        submitters.execute(() -> {
          for (int i = 0; i < perThread; i++) {
            int n = i;
            serial.execute(() -> {
              if (running.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
              }
              order.add(n);
              running.decrementAndGet();
              done.countDown();
            });
          }
        });
      }
      assertThat(done.await(60, TimeUnit.SECONDS)).as("every task ran").isTrue();
      assertThat(overlaps).as("tasks that ran while another did").hasValue(0);
      for (List<Integer> order : seen) {
        assertThat(order).hasSize(perThread).isSorted();
      }
    } finally {
      submitters.shutdownNow();
      pool.shutdownNow();
    }
  }
}
