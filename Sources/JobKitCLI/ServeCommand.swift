import ArgumentParser
import Foundation
import JobKitServer

/// `jobkit serve`: the loopback server in the foreground, until Ctrl-C.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the seeds' backends (files, media, posts, products, feed) on 127.0.0.1.")

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

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535.") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be between 0 and 1.") }
        guard (400...599).contains(failureStatus) else { throw ValidationError("--failure-status must be 4xx or 5xx.") }
        guard Self.parseLatency(latency) != nil else {
            throw ValidationError("--latency must be milliseconds, N or MIN-MAX (for example 100-500).")
        }
    }

    static func parseLatency(_ text: String) -> ClosedRange<Int>? {
        let parts = text.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        switch parts.count {
        case 1: if let value = parts[0], value >= 0 { return value...value }
        case 2: if let low = parts[0], let high = parts[1], 0 <= low, low <= high { return low...high }
        default: break
        }
        return nil
    }

    func run() async throws {
        let plan = FaultPlan(
            latencyMilliseconds: Self.parseLatency(latency)!, failureRate: failureRate, failureStatus: failureStatus)
        let rootURL = URL(fileURLWithPath: root, isDirectory: true)
        let server = try await LoopbackServer.start(.init(root: rootURL, port: port, faults: plan))
        print("serving \(rootURL.path) at \(server.baseURL.absoluteString) — Ctrl-C to stop")
        try await server.wait()
    }
}
