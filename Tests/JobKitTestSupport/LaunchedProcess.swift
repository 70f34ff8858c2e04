import Foundation
import Testing

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
    /// It polls every 5 ms on a thread of GCD's, which the system schedules however busy the tests'
    /// shared threads are: a test that kills its child at a point sees that point in time.
    package func waitUntil(seconds: Double = 120, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        await offThePool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                guard self.process.isRunning, Date() < deadline else { return condition() }
                usleep(5_000)
            }
            return true
        }
    }

    /// Polls as `waitUntil` does and sends `signal` from the polling thread the moment `condition`
    /// holds (or the time is up); returns whether it held. A test that kills its child at a point
    /// must not wait for a shared thread between seeing the point and acting on it: under a full
    /// run's load that wait can outlast the child's whole run.
    package func send(
        _ signal: Int32, seconds: Double = 120, when condition: @escaping @Sendable () -> Bool
    ) async -> Bool {
        await offThePool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition(), self.process.isRunning, Date() < deadline { usleep(2_000) }
            let held = condition()
            self.send(signal)
            return held
        }
    }

    /// Sends `signal`.
    package func send(_ signal: Int32) {
        signalled.withLock { $0 = true }
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Whether the test sent the child a signal (then a death by signal is no crash).
    private let signalled = Locked(false)

    /// Waits for the end, on a thread of GCD's (see `offThePool`); returns the exit status (or the
    /// signal's number when it was killed).
    /// After `timeout` (on the real clock) the child is killed (SIGKILL) and an issue recorded
    /// with its standard error.
    package func wait(
        timeout: Duration = childProcessDeadline, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Int32 {
        let ended = await offThePool { waitForExit(of: self.process, timeout: timeout) }
        let status = process.terminationStatus
        if !ended {
            Issue.record(
                "\(WaitTimedOut("the child to end (killed)", timeout: timeout)); its stderr:\n\(stderr)",
                sourceLocation: sourceLocation)
        } else if !signalled.withLock({ $0 }) {
            reportIfItCrashed(
                process.executableURL?.lastPathComponent ?? "child", status: status, reason: process.terminationReason,
                stderr: stderr)
        }
        return status
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
