import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download --trace FILE` and `--log-level LEVEL`, run as a user runs them.
@Suite(.timeLimit(.minutes(10))) struct DownloadCommandTraceTests {
    @Test func traceWritesAChromeTraceAndLogLevelLogsOnStandardErrorLeavingTheOutputAsItIs() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let files = try fixture.make("file", count: 2) { 1000 + $0 }
        let server = try await ServeProcess.start(
            root: fixture.folder.appendingPathComponent("root"), arguments: ["--access-log", fixture.accessLog.path])
        let base = try #require(server.baseURL).appendingPathComponent("files")
        let urls = files.map { base.appendingPathComponent($0).absoluteString }
        let trace = fixture.folder.appendingPathComponent("downloads.json")

        let output = try await runProduct(
            "jobkit",
            arguments: ["download", "-o", fixture.output.path, "--trace", trace.path, "--log-level", "debug"] + urls)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(files.allSatisfy(fixture.arrived))
        let lines = output.stdout.split(separator: "\n")
        #expect(lines.last == "trace written to \(trace.path)")
        #expect(lines.dropLast().last?.hasPrefix("downloaded 2 files (") == true, "the summary as without --trace")

        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as? [String: Any]
        let names = Set(((json?["traceEvents"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
        #expect(files.allSatisfy { names.contains("download \($0)") }, "\(names)")

        for name in files {
            #expect(output.stderr.contains("download completed") && output.stderr.contains("download.name=\(name)"))
        }
        #expect(output.stderr.contains("debug"), "\(output.stderr)")

        // Without --log-level nothing is logged; without --trace no trace line.
        let quiet = try await runProduct("jobkit", arguments: ["download", "-o", fixture.output.path] + urls)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(!quiet.stdout.contains("trace written"))
        _ = server
    }
}
