package dev.caravan.csi.scenario;

/** {@link ControllerRulesConformance} on the local backend (ZFS zvols; runs in the guest). */
class ControllerRulesConformanceOnLocalTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  /**
   * Twenty: a round is four zvol operations and a {@code zfs list} under the guest's emulated CPU, and
   * ConcurrencyConformanceOnLocalTest races create and delete ten more times.
   */
  @Override
  int raceRounds() {
    return 20;
  }
}
