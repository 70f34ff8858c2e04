import Foundation
import JobKitTestSupport
import Testing

/// `jobkit demo`, run end to end as a user runs it.
@Suite struct DemoCommandTests {
    /// Three downloads, two at a time: the third waits for a slot. (Each download costs the demo half a
    /// second of processor time under the thread sanitizer; this test, one process among the suite's
    /// busy threads, was the sanitized run's long pole with six.)
    private let fast = ["--chunk-milliseconds", "2", "--jobs", "3", "--max-concurrent", "2"]

    @Test func runsEveryScenarioOverHTTPWithItsExpectedOutcome() async throws {
        let output = try await runProduct("jobkit", arguments: ["demo"] + fast)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("(in process)"))
        #expect(output.stdout.contains("publish: the server has the post"))
        #expect(output.stdout.contains("downloads: every file arrived byte-exact"))
        #expect(output.stdout.contains("deallocated: true, delegate called: 0 times"))
        for scenario in ["downloads", "publish", "result queue", "feed"] {
            #expect(output.stdout.split(separator: "\n").contains("✓ \(scenario)"))
        }
        for id in 1...3 {
            let lines = output.stdout.split(separator: "\n").filter {
                $0.hasSuffix("download \(id): pending") || $0.contains("download \(id):")
            }
            #expect(lines.first?.hasSuffix("pending") == true)
            #expect(lines.contains { $0.contains("running") })
            #expect(lines.last?.hasSuffix("completed") == true)
        }
        let all = output.stdout.components(separatedBy: "All download tasks have been completed").count - 1
        #expect(all == 1)
    }

    @Test func aFailedUploadMeansThePostIsNotPublished() async throws {
        let output = try await runProduct("jobkit", arguments: ["demo", "--fail-upload", "--jobs", "0"])
        #expect(output.status == 0, "the expected outcome is an unpublished post: \(output.stderr)")
        #expect(output.stdout.contains("the post was NOT published"))
        #expect(output.stdout.contains("the server does not have the post"))
    }

    @Test func writesATraceAndATimeline() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let trace = directory.appendingPathComponent("run.json")
        let timeline = directory.appendingPathComponent("run.svg")
        let output = try await runProduct(
            "jobkit",
            arguments: ["demo", "--photos", "1", "--videos", "1", "--trace", trace.path, "--timeline", timeline.path]
                + fast)
        #expect(output.status == 0, "\(output.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [String: Any]
        #expect((json?["traceEvents"] as? [Any])?.isEmpty == false)
        let svg = try String(contentsOf: timeline, encoding: .utf8)
        #expect(svg.contains("<svg") && svg.contains("2 slots"), "at most two downloads, then two uploads, at once")
    }

    @Test func rejectsBadInputWithAClearMessage() async throws {
        let output = try await runProduct("jobkit", arguments: ["demo", "--max-concurrent", "0"])
        #expect(output.status != 0, "\(output.stderr)")
        #expect(output.stderr.contains("--max-concurrent must be at least 1"))
    }
}
