import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct MainQueueWatchdogTests {
    @Test func warnsOnceInAProcessThatNeverServicesTheMainQueue() throws {
        let output = try runProduct("JobKitProbe", arguments: ["200", "1200", "block"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("probe done"))
        #expect(!output.stdout.contains("handler ran"), "nothing services the main queue")
        let warnings = output.stderr.components(separatedBy: "JobKit warning").count - 1
        #expect(warnings == 1)
        #expect(output.stderr.contains("dispatchMain()"))
        #expect(output.stderr.contains("resultQueue"))
    }

    @Test func staysQuietWhenTheMainQueueRunsTheHandlerInTime() throws {
        let output = try runProduct("JobKitProbe", arguments: ["200", "1200", "serve"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("handler ran"))
        #expect(!output.stderr.contains("JobKit warning"))
    }

    /// `JOBKIT_MAIN_WATCHDOG` is input: `inf` trapped (`Double value cannot be converted`) as the first
    /// handler on the main queue read it. Now a hostile value is ignored with one line, and the process
    /// goes on with the default threshold.
    @Test(arguments: ["inf", "nan", "1e30", "-1", "garbage"])
    func aHostileThresholdInTheEnvironmentIsIgnoredWithOneWarning(value: String) throws {
        let unset = try runProduct("JobKitProbe", arguments: ["watchdog"])
        let output = try runProduct(
            "JobKitProbe", arguments: ["watchdog"], environment: ["JOBKIT_MAIN_WATCHDOG": value])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == unset.stdout)
        #expect(
            output.stderr.split(separator: "\n") == [
                "warning: ignoring JOBKIT_MAIN_WATCHDOG='\(value)': not off or a duration in seconds between 0 and 86400"
            ])
    }

    @Test func aThresholdInTheEnvironmentSetsTheStartingValue() throws {
        let half = try runProduct(
            "JobKitProbe", arguments: ["watchdog"], environment: ["JOBKIT_MAIN_WATCHDOG": "0.5"])
        #expect(half.stdout == "watchdog threshold-ms=500\n")
        #expect(half.stderr.isEmpty)
        let off = try runProduct(
            "JobKitProbe", arguments: ["watchdog"], environment: ["JOBKIT_MAIN_WATCHDOG": "off"])
        #expect(off.stdout == "watchdog off\n")
        #expect(off.stderr.isEmpty)
    }

    @Test func thresholdIsConfigurablePerProcess() {
        let saved = MainQueueWatchdog.threshold
        defer { MainQueueWatchdog.threshold = saved }
        MainQueueWatchdog.threshold = nil
        #expect(MainQueueWatchdog.threshold == nil)
        MainQueueWatchdog.threshold = .seconds(5)
        #expect(MainQueueWatchdog.threshold == .seconds(5))
    }
}

@Suite struct TimerMemoryTests {
    /// Measured in a child process of its own, where nothing else allocates.
    @Test func twoHundredThousandFinishedTimeoutsHoldNoMemory() throws {
        // Each pending hour-long timer held about 1 KB before timers were cancellable: +246 MB here,
        // against +3 MB now (+21 MB under the thread sanitizer, whose shadow memory counts too).
        try expectResidentGrowthBounded(probe: "timeouts", runs: 200_000)
    }

    /// 150,000 runs of `.just(1).delay(.seconds(3600))` on a scheduler that forwards to `.dispatch`
    /// and, once `schedule` returned, has another thread cancel the run through a handle it keeps.
    /// Each ended run kept its job's body, which captured that scheduler and so the handle: about
    /// 700 bytes a run stayed (+105 MB here), against +4 MB now.
    @Test func delaysCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() throws {
        try expectResidentGrowthBounded(probe: "cancelled-delays", runs: 150_000)
    }

    /// The same for `.timeout(.seconds(3600))` of a job that never completes (+98 MB before).
    @Test func timeoutsCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() throws {
        try expectResidentGrowthBounded(probe: "cancelled-timeouts", runs: 150_000)
    }

    /// The same for `retry`'s backoff of an hour, cancelled while it waits (+120 MB before).
    @Test func retryBackoffsCancelledFromAnotherThreadOnceTheirTimerIsArmedHoldNoMemory() throws {
        try expectResidentGrowthBounded(probe: "cancelled-backoffs", runs: 150_000)
    }

    /// Runs `JobKitProbe PROBE RUNS` and expects its resident memory to grow by less than 16 MB (64
    /// MB under the thread sanitizer, whose shadow memory counts too).
    private func expectResidentGrowthBounded(probe: String, runs: Int) throws {
        let output = try runProduct("JobKitProbe", arguments: [probe, String(runs)])
        let fields = keyValues(output.stdout)
        guard let before = fields["before"], let after = fields["after"], before > 0 else {
            Issue.record("no measurement: \(output.stdout) \(output.stderr)")
            return
        }
        let bound = isThreadSanitized ? 65_536 : 16_384
        #expect(after - before < bound, "resident memory grew from \(before) KB to \(after) KB")
    }
}

/// The `key=value` fields of a probe's output line.
func keyValues(_ text: String) -> [String: Int] {
    var fields: [String: Int] = [:]
    for field in text.split(whereSeparator: \.isWhitespace) {
        let parts = field.split(separator: "=")
        if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
    }
    return fields
}

@Suite struct JobDiagnosticsTests {
    /// With no handler installed, a misuse repeated a thousand times prints one line.
    @Test func repeatedMisuseIsPrintedOncePerProcessAndCounted() throws {
        let output = try runProduct("JobKitProbe", arguments: ["twice", "1000"])
        #expect(keyValues(output.stdout)["count"] == 1_000)
        let lines = output.stderr.split(separator: "\n").filter { $0.contains("completed twice") }
        #expect(lines.count == 1, "\(output.stderr.prefix(500))")
        #expect(lines.first?.contains("eventCount") == true)
    }

    @Test func aHandlerCapturesEveryMisuseInsteadOfPrinting() async throws {
        let seen = Locked<[ObjectIdentifier]>([])
        let token = JobDiagnostics.addHandler { event in seen.withLock { $0.append(event.runID) } }
        defer { JobDiagnostics.removeHandler(token) }
        let bodyReturned = OutcomeBox<Void>()
        let (handle, outcome) = Job<Int> { controller in
            controller.finish(1)
            controller.fail(with: TestError(id: 1))
            controller.finish(3)
            bodyReturned.set(.success(()))
        }.started()
        #expect(try await outcome.result.get() == 1)
        _ = await bodyReturned.result  // the handler may run before the body's later calls
        #expect(seen.current.filter { $0 == handle.id }.count == 1, "once per run")
    }
}
