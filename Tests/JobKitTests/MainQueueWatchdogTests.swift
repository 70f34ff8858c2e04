import Foundation
import Testing

@testable import JobKit

@Suite struct MainQueueWatchdogTests {
    @Test func warnsOnceInAProcessThatNeverServicesTheMainQueue() throws {
        let output = try runProduct("JobKitWatchdogProbe", arguments: ["200", "1200", "block"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("probe done"))
        #expect(!output.stdout.contains("handler ran"), "nothing services the main queue")
        let warnings = output.stderr.components(separatedBy: "JobKit warning").count - 1
        #expect(warnings == 1)
        #expect(output.stderr.contains("dispatchMain()"))
        #expect(output.stderr.contains("resultQueue"))
    }

    @Test func staysQuietWhenTheMainQueueRunsTheHandlerInTime() throws {
        let output = try runProduct("JobKitWatchdogProbe", arguments: ["200", "1200", "serve"])
        #expect(output.status == 0)
        #expect(output.stdout.contains("handler ran"))
        #expect(!output.stderr.contains("JobKit warning"))
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
