package dev.caravan.csi;

/** Fewer tries than on the host: the guest runs under an emulated CPU, where every call costs more. */
class RequestFuzzOnLocalTest extends RequestFuzz {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  @Override
  int defaultTries() {
    return 25;
  }
}
