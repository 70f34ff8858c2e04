import Foundation
import JobKitTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `jobkit serve` process running in the background, its output going to files.
// Safety: `baseURL` is written only in `init`, before the value is shared; `Process` is used
// through its thread-safe calls; the rest is constant.
final class ServeProcess: @unchecked Sendable {
    let process = Process()
    let root: URL
    private let stdoutURL: URL
    private let stderrURL: URL
    /// The address from the "serving … at URL" line.
    private(set) var baseURL: URL?

    /// Launches `jobkit serve --port 0 --root root` and waits, on a thread of its own (never one of
    /// the tests' shared pool: see `offThePool`), for its "serving" line.
    static func start(root: URL, arguments: [String] = []) async throws -> ServeProcess {
        try await offThePool { Result { try ServeProcess(root: root, arguments: arguments) } }.get()
    }

    /// Launches `jobkit serve --port 0 --root root` and waits for its "serving" line (blocking).
    private init(root: URL, arguments: [String] = []) throws {
        self.root = root
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        stdoutURL = scratch.appendingPathComponent("stdout")
        stderrURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        process.executableURL = directory.appendingPathComponent("jobkit")
        process.arguments = ["serve", "--port", "0", "--root", root.path] + arguments
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
        // The line arrives while the process runs only because standard output is line-buffered.
        let deadline = ContinuousClock.now + safetyDeadline
        while baseURL == nil, process.isRunning, ContinuousClock.now < deadline {
            if let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix("serving ") }),
                let at = line.range(of: " at "), let end = line.range(of: " — ")
            {
                baseURL = URL(string: String(line[at.upperBound..<end.lowerBound]))
            } else {
                usleep(10_000)  // waiting for the process to start, not for an outcome
            }
        }
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits (off the pool) for the process to end; kills it (SIGKILL) after
    /// the deadline for a child, with an issue recorded.
    func stop(
        with signal: Int32, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> (status: Int32, reason: Process.TerminationReason) {
        kill(process.processIdentifier, signal)
        let ended = await offThePool { waitForExit(of: self.process, timeout: childProcessDeadline) }
        if !ended {
            let timedOut = WaitTimedOut(
                "jobkit serve to end after signal \(signal) (killed)", timeout: childProcessDeadline)
            Issue.record("\(timedOut); its stderr:\n\(stderr)", sourceLocation: sourceLocation)
        }
        return (process.terminationStatus, process.terminationReason)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// `jobkit serve`, run as a user runs it.
@Suite struct ServeCommandTests {
    private func newRoot() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-root-\(UUID().uuidString)")
    }

    private func send(_ method: String, _ url: URL, json: String? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    @Test func rejectsBadLatencyAndRates() async throws {
        for arguments in [
            ["--latency", "5-1"], ["--failure-rate", "2"], ["--port", "70000"], ["--failure-status", "200"],
            ["--latency=-5"], ["--latency", "99999999"],
        ] {
            let output = try await runProduct("jobkit", arguments: ["serve"] + arguments)
            #expect(output.status == 64, "a usage error: \(output.stderr)")
            #expect(output.stderr.contains("must"), "\(arguments): \(output.stderr)")
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aPortInUseIsOneErrorLineAndExitCode1AtOnce() async throws {
        let running = try await ServeProcess.start(root: newRoot())
        let port = try #require(running.baseURL?.port)
        let output = try await runProduct(
            "jobkit", arguments: ["serve", "--port", "\(port)", "--root", newRoot().path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr == "error: cannot listen on 127.0.0.1:\(port): address already in use\n")
        #expect(!output.stdout.contains("serving"))
    }

    @Test(.timeLimit(.minutes(10)))
    func aRootThatCannotBeUsedIsOneErrorLine() async throws {
        let file = newRoot()
        try Data("x".utf8).write(to: file)
        let output = try await runProduct("jobkit", arguments: ["serve", "--port", "0", "--root", file.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.hasPrefix("error: cannot use \(file.path) as the server's root: "))
        #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
    }

    @Test(.timeLimit(.minutes(10)))
    func aCorruptPostsLogIsOneErrorLineNamingFileAndLine() async throws {
        let root = newRoot()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let log = root.appendingPathComponent("posts.jsonl")
        try Data("garbage\n".utf8).write(to: log)
        let output = try await runProduct("jobkit", arguments: ["serve", "--port", "0", "--root", root.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr == "error: cannot read \(log.path): line 1 is not a post\n")
    }

    @Test(.timeLimit(.minutes(10)), arguments: [SIGINT, SIGTERM])
    func signalsStopTheServerGracefullyWithExitCode0(signal: Int32) async throws {
        let server = try await ServeProcess.start(root: newRoot())
        #expect(server.baseURL != nil, "the serving line is written at once: \(server.stderr)")
        let (status, reason) = await server.stop(with: signal)
        #expect(reason == .exit && status == 0)
        #expect(server.stdout.hasSuffix("stopped\n"))
    }

    @Test(.timeLimit(.minutes(10)))
    func theAccessLogHasOneLinePerRequestWithItsRangeAndStatus() async throws {
        let root = newRoot()
        let log = root.deletingLastPathComponent().appendingPathComponent("access-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("files"), withIntermediateDirectories: true)
        try Data(count: 100).write(to: root.appendingPathComponent("files/a.bin"))
        let server = try await ServeProcess.start(root: root, arguments: ["--access-log", log.path])
        let base = try #require(server.baseURL)
        var request = URLRequest(url: base.appendingPathComponent("files/a.bin"))
        request.setValue("bytes=10-", forHTTPHeaderField: "Range")
        _ = try await URLSession.shared.data(for: request)
        _ = try await send("GET", base.appendingPathComponent("files/missing"))
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(lines == ["GET /files/a.bin range=bytes=10- status=206", "GET /files/missing range=- status=404"])
        _ = await server.stop(with: SIGTERM)
    }

    @Test(.timeLimit(.minutes(10)))
    func everyAcknowledgedPostSurvivesKill9() async throws {
        let root = newRoot()
        let first = try await ServeProcess.start(root: root)
        let firstURL = try #require(first.baseURL)
        var acknowledged: [String] = []
        for index in 0..<25 {
            let text = "post \(index)"
            let (status, _) = try await send(
                "POST", firstURL.appendingPathComponent("posts"), json: #"{"text":"\#(text)","mediaIDs":[]}"#)
            if status == 201 { acknowledged.append(text) }
        }
        #expect(acknowledged.count == 25)
        let (_, reason) = await first.stop(with: SIGKILL)
        #expect(reason == .uncaughtSignal)
        let second = try await ServeProcess.start(root: root)
        let secondURL = try #require(second.baseURL)
        let (status, data) = try await send("GET", secondURL.appendingPathComponent("posts"))
        #expect(status == 200)
        let posts = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        #expect(posts.compactMap { $0["text"] as? String } == acknowledged)
        _ = await second.stop(with: SIGTERM)
    }
}
