import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a finished child process printed.
package struct ProcessOutput {
    package var status: Int32
    package var stdout: String
    package var stderr: String

    package init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// The folder the test bundle was built in: where `jobkit` and the probe snippets are.
package var productsFolder: URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
}

/// Runs an executable built beside the test bundle (`jobkit`, `JobKitProbe`, `DownloadManagerProbe`)
/// to its end and collects its output; `environment` is set on top of this process's environment.
/// It waits on a thread of GCD's (see `offThePool`).
package func runProduct(_ name: String, arguments: [String], environment: [String: String] = [:]) async throws
    -> ProcessOutput
{
    try await offThePool { Result { try runToEnd(name, arguments: arguments, environment: environment) } }.get()
}

private func runToEnd(_ name: String, arguments: [String], environment: [String: String]) throws -> ProcessOutput {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    // Files, not pipes: a chatty child can never block on a full pipe while we wait for it.
    let stdoutURL = scratch.appendingPathComponent("stdout")
    let stderrURL = scratch.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
    let process = Process()
    process.executableURL = productsFolder.appendingPathComponent(name)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
    process.standardError = try FileHandle(forWritingTo: stderrURL)
    try process.run()
    let ended = waitForExit(of: process, timeout: childProcessDeadline)
    let output = ProcessOutput(
        status: process.terminationStatus, stdout: try String(contentsOf: stdoutURL, encoding: .utf8),
        stderr: try String(contentsOf: stderrURL, encoding: .utf8))
    if !ended {
        throw WaitTimedOut(
            "\(name) \(arguments.joined(separator: " ")) to end (killed); its stderr:\n\(output.stderr)",
            timeout: childProcessDeadline)
    }
    reportIfItCrashed(name, status: output.status, reason: process.terminationReason, stderr: output.stderr)
    return output
}

/// Blocks this thread (never one of the cooperative pool's: see `offThePool`) until `process`
/// ends, or `timeout` passes — then kills it (SIGKILL) and waits for that. Returns whether it
/// ended by itself.
package func waitForExit(of process: Process, timeout: Duration) -> Bool {
    // Foundation notices a child's exit on a thread of its own; this thread looks at the news every 10 ms.
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        if ContinuousClock.now >= deadline {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return false
        }
        usleep(10_000)
    }
    process.waitUntilExit()
    return true
}

/// Prints a child's standard error into the test's output when the child crashed (a signal it was
/// not sent by the test) or the thread sanitizer reported a race in it (exit 66): what it printed
/// is the only record of why, and the test's own expectation may not show it.
package func reportIfItCrashed(
    _ name: String, status: Int32, reason: Process.TerminationReason, stderr: String
) {
    guard reason == .uncaughtSignal || status == 66 else { return }
    let what = reason == .uncaughtSignal ? "was killed by signal \(status)" : "exited 66 (a sanitizer report)"
    FileHandle.standardError.write(
        Data("\n=== \(name) \(what); its standard error:\n\(stderr)\n=== end of \(name)'s standard error\n".utf8))
}

/// The `key=value` fields of a probe's output line.
package func keyValues(_ text: String) -> [String: Int] {
    var fields: [String: Int] = [:]
    for field in text.split(whereSeparator: \.isWhitespace) {
        let parts = field.split(separator: "=")
        if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
    }
    return fields
}
