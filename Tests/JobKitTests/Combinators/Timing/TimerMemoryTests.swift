import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct TimerMemoryTests {
    /// Measured in a child process of its own, where nothing else allocates.
    @Test func twoHundredThousandFinishedTimeoutsHoldNoMemory() async throws {
        // Each pending hour-long timer held about 1 KB before timers were cancellable: +246 MB here,
        // against +3 MB now.
        try await expectResidentGrowthBounded(probe: "timeouts", runs: 200_000)
    }

    /// 150,000 runs of `.just(1).delay(.seconds(3600))` on a scheduler that forwards to `.dispatch`
    /// and, once `schedule` returned, has another thread cancel the run through a handle it keeps.
    /// Each ended run kept its job's body, which captured that scheduler and so the handle: about
    /// 700 bytes a run stayed (+105 MB here), against +4 MB now.
    @Test func delaysCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() async throws {
        try await expectResidentGrowthBounded(probe: "cancelled-delays", runs: 150_000)
    }

    /// The same for `.timeout(.seconds(3600))` of a job that never completes (+98 MB before).
    @Test func timeoutsCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() async throws {
        try await expectResidentGrowthBounded(probe: "cancelled-timeouts", runs: 150_000)
    }

    /// The same for `retry`'s backoff of an hour, cancelled while it waits (+120 MB before).
    @Test func retryBackoffsCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() async throws {
        try await expectResidentGrowthBounded(probe: "cancelled-backoffs", runs: 150_000)
    }

    /// Runs `JobKitProbe PROBE RUNS` and expects its resident memory to grow by less than 16 MB.
    ///
    /// Under the thread sanitizer the probe runs a tenth of the runs (`JOBKIT_TEST_SCALE_DOWN`) and
    /// its memory is not judged: there each of these children took nearly five minutes, the long pole
    /// of CI's sanitized run, and the shadow memory swamps the measure; what that run looks for is a
    /// race between the timer, the cancel and the run's end, which the first thousands of runs show as
    /// well as the last. The plain run measures the memory at full length.
    private func expectResidentGrowthBounded(probe: String, runs: Int) async throws {
        let output = try await runProduct(
            "JobKitProbe", arguments: [probe, String(isThreadSanitized ? scaledForTheRun(runs) : runs)])
        #expect(output.status == 0, "the probe exited \(output.status): \(output.stderr)")
        let fields = keyValues(output.stdout)
        guard let before = fields["before"], let after = fields["after"], before > 0 else {
            Issue.record("no measurement: \(output.stdout) \(output.stderr)")
            return
        }
        guard !isThreadSanitized else { return }
        #expect(after - before < 16_384, "resident memory grew from \(before) KB to \(after) KB")
    }
}
