import Foundation

/// A `jobkit` process launched in the background, its output going to files, to be signalled and awaited.
final class LaunchedProcess {
    let process = Process()
    private let stdoutURL: URL
    private let stderrURL: URL
    private let scratch: URL

    /// Launches the product `jobkit` built beside the test bundle with `arguments`.
    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        stdoutURL = scratch.appendingPathComponent("stdout")
        stderrURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        process.executableURL = directory.appendingPathComponent("jobkit")
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Polls until `condition` holds or the process ended or `seconds` passed; returns whether it holds.
    /// (Waiting for the child to reach a point, not for an outcome: the outcome is checked afterwards.)
    func waitUntil(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard process.isRunning, Date() < deadline else { return condition() }
            usleep(5_000)
        }
        return true
    }

    /// Sends `signal`.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the end; returns the exit status (or the signal's number when it was killed).
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: scratch)
    }
}
