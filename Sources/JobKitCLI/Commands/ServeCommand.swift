import ArgumentParser
import Foundation
import JobKitServer

/// `jobkit serve`: the loopback server in the foreground, until Ctrl-C (SIGINT) or SIGTERM, which stop it
/// gracefully and exit 0. A port that cannot be bound is one line on standard error and exit code 1.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the demo's backends (files, media, posts, products, feed) on 127.0.0.1.",
        discussion: """
            SIGINT and SIGTERM stop the server gracefully (requests in flight are answered) and exit 0. \
            Exit codes: 0 stopped by a signal; 1 the server could not start (the port is in use, the root \
            cannot be used) or failed; 64 a wrong command line.
            """)

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(help: "Folder for files, uploads and posts (created if missing).")
    var root = "jobkit-server"

    @Option(help: ArgumentHelp("Latency added to every response, in ms: N or MIN-MAX.", valueName: "ms"))
    var latency = "0"

    @Option(help: "Share of requests (0...1) answered with --failure-status.")
    var failureRate = 0.0

    @Option(help: "Status of injected failures.")
    var failureStatus = 503

    @Option(help: ArgumentHelp("Refuse larger uploads with 413.", valueName: "bytes"))
    var maxUploadBytes = 64 << 20

    @Option(
        help: ArgumentHelp(
            "Append one line per request (method, path, Range header, status) to this file.", valueName: "file"))
    var accessLog: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535.") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be between 0 and 1.") }
        guard (400...599).contains(failureStatus) else { throw ValidationError("--failure-status must be 4xx or 5xx.") }
        guard maxUploadBytes >= 0 else { throw ValidationError("--max-upload-bytes must be 0 or more.") }
        guard Self.parseLatency(latency) != nil else {
            throw ValidationError(
                "--latency must be milliseconds up to \(FaultPlan.maximumLatencyMilliseconds), N or MIN-MAX "
                    + "(for example 100-500).")
        }
    }

    static func parseLatency(_ text: String) -> ClosedRange<Int>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map {
            Int($0.trimmingCharacters(in: .whitespaces)).flatMap {
                (0...FaultPlan.maximumLatencyMilliseconds) ~= $0 ? $0 : nil
            }
        }
        switch parts.count {
        case 1: if let value = parts[0], value >= 0 { return value...value }
        case 2: if let low = parts[0], let high = parts[1], 0 <= low, low <= high { return low...high }
        default: break
        }
        return nil
    }

    func run() async throws {
        // Line-buffered even into a pipe or a file, so `jobkit serve > log` shows the address at once.
        StandardOutput.makeLineBuffered()
        let plan = FaultPlan(
            latencyMilliseconds: Self.parseLatency(latency) ?? 0...0, failureRate: failureRate,
            failureStatus: failureStatus)
        let rootURL = URL(fileURLWithPath: root, isDirectory: true)
        let server: LoopbackServer
        do {
            server = try await LoopbackServer.start(
                .init(
                    root: rootURL, port: port, maxUploadBytes: maxUploadBytes, faults: plan, stopsOnSignals: true,
                    accessLog: accessLog.map { URL(fileURLWithPath: $0) }))
        } catch {
            throw CommandLineError.report(error)
        }
        print("serving \(rootURL.path) at \(server.baseURL.absoluteString) — Ctrl-C to stop")
        do {
            try await server.wait()
        } catch {
            throw CommandLineError.report(error)
        }
        print("stopped")
    }
}
