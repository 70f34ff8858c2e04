import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An executable built beside the test bundle (`jobkit` by default, or a probe snippet), launched in
/// the background, its output going to files, to be signalled and awaited: the one process harness
/// of the tests (`runProduct` runs one to its end).
// Safety: `Process` is used through its thread-safe calls; the rest is constant.
package final class LaunchedProcess: @unchecked Sendable {
    package let process = Process()
    private let stdoutURL: URL
    private let stderrURL: URL
    private let scratch: URL

    /// Launches `product` (built beside the test bundle) with `arguments`; `environment` replaces this
    /// process's environment when given.
    package init(_ arguments: [String], product: String = "jobkit", environment: [String: String]? = nil) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        stdoutURL = scratch.appendingPathComponent("stdout")
        stderrURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = productsFolder.appendingPathComponent(product)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    package var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    package var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Polls until `condition` holds or the process ended or `seconds` passed; returns whether it holds.
    /// (Waiting for the child to reach a point, not for an outcome: the outcome is checked afterwards.)
    package func waitUntil(seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard process.isRunning, Date() < deadline else { return condition() }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Sends `signal`.
    package func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the end, on a thread of GCD's (see `offThePool`); returns the exit status (or the
    /// signal's number when it was killed).
    package func wait() async -> Int32 {
        await offThePool {
            self.process.waitUntilExit()
            return self.process.terminationStatus
        }
    }

    /// Standard output, then standard error.
    package var output: String { stdout + stderr }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: scratch)
    }
}
