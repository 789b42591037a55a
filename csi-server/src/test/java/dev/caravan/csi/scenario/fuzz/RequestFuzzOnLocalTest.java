package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.scenario.TestBackend;

/**
 * Fewer tries than on the host: the guest runs under an emulated CPU, where every call costs more. What
 * the local backend adds to the draws is its id shapes and parameters; the file backend's run on the
 * host sends the thousands of requests that probe the shared validation.
 */
class RequestFuzzOnLocalTest extends RequestFuzz {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  @Override
  int defaultTries() {
    return 8;
  }

  /**
   * In the test JVM: the guest is a throwaway machine of its own, and starting a second JVM there is
   * slow under the emulated CPU.
   */
  @Override
  boolean isolatePlugin() {
    return false;
  }
}
