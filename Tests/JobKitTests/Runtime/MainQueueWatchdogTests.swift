import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct MainQueueWatchdogTests {
    @Test func warnsOnceInAProcessThatNeverServicesTheMainQueue() async throws {
        let output = try await runProduct("JobKitProbe", arguments: ["200", "1200", "block"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("probe done"))
        #expect(!output.stdout.contains("handler ran"), "nothing services the main queue")
        let warnings = output.stderr.components(separatedBy: "JobKit warning").count - 1
        #expect(warnings == 1)
        #expect(output.stderr.contains("dispatchMain()"))
        #expect(output.stderr.contains("resultQueue"))
    }

    @Test func staysQuietWhenTheMainQueueRunsTheHandlerInTime() async throws {
        let output = try await runProduct("JobKitProbe", arguments: ["200", "1200", "serve"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("handler ran"))
        #expect(!output.stderr.contains("JobKit warning"))
    }

    /// `JOBKIT_MAIN_WATCHDOG` is input: `inf` trapped (`Double value cannot be converted`) as the first
    /// handler on the main queue read it. Now a hostile value is ignored with one line, and the process
    /// goes on with the default threshold.
    @Test(arguments: ["inf", "nan", "1e30", "-1", "garbage"])
    func aHostileThresholdInTheEnvironmentIsIgnoredWithOneWarning(value: String) async throws {
        let unset = try await runProduct("JobKitProbe", arguments: ["watchdog"])
        let output = try await runProduct(
            "JobKitProbe", arguments: ["watchdog"], environment: ["JOBKIT_MAIN_WATCHDOG": value])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout == unset.stdout)
        #expect(
            output.stderr.split(separator: "\n") == [
                "warning: ignoring JOBKIT_MAIN_WATCHDOG='\(value)': not off or a duration in seconds between 0 and 86400"
            ])
    }

    @Test func aThresholdInTheEnvironmentSetsTheStartingValue() async throws {
        let half = try await runProduct(
            "JobKitProbe", arguments: ["watchdog"], environment: ["JOBKIT_MAIN_WATCHDOG": "0.5"])
        #expect(half.stdout == "watchdog threshold-ms=500\n")
        #expect(half.stderr.isEmpty)
        let off = try await runProduct(
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
