import Dispatch
import Foundation
import JobKit
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `jobkit _probe …` (or, with `probe: false`, any `jobkit` command) running in the background, its
/// standard output and error collected together.
final class ProbeProcess: Sendable {
    private let process: UncheckedProcess
    private let outputFile: URL

    init(_ arguments: [String], probe: Bool = true) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("jobkit")
        let scratch = try scratchFolder()
        outputFile = scratch.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = (probe ? ["_probe"] : []) + arguments
        let output = try FileHandle(forWritingTo: outputFile)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        self.process = UncheckedProcess(process: process)
    }

    /// What it printed so far.
    var output: String { (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "" }

    /// Sends SIGKILL (if it still runs).
    func kill() {
        if process.process.isRunning { sendKill(process.process.processIdentifier) }
    }

    /// Waits for the end; the exit status, or the signal that ended it.
    func waitForExit() -> Int32 {
        process.process.waitUntilExit()
        return process.process.terminationStatus
    }
}

/// SIGKILL to `pid`.
private func sendKill(_ pid: Int32) {
    _ = kill(pid, SIGKILL)
}

// Safety: Process is used from one test at a time, through its thread-safe calls.
struct UncheckedProcess: @unchecked Sendable {
    let process: Process
}
