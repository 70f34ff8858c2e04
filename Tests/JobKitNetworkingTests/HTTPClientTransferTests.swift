import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit
import NIOCore
import NIOPosix
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Downloads through AsyncHTTPClient: how they wait for connections.
@Suite struct HTTPClientTransferTests {
    @Test func aTransferWaitingForAConnectionIsQueuedAgainNotFailed() async throws {
        // A client with one connection per host, which gives up waiting for it after 1 s. The
        // server holds the first answer 1.5 s: the second download waits for the connection
        // longer than that (AsyncHTTPClient's `getConnectionFromPoolTimeout`), then gets it.
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(1), read: .seconds(20)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        configuration.decompression = .disabled
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let bodies = [pattern(40_000, seed: 1), pattern(40_000, seed: 2)]
        let server = try ScriptedServer { request, index in
            let reply = ScriptedServer.Reply.respond(200, body: bodies[request.path == "/a" ? 0 : 1])
            guard index == 0 else { return reply }
            let held = Gate()
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1500)) { held.open() }
            return .waiting(for: held, then: reply)
        }
        defer { server.stop() }
        let folder = try scratchFolder()

        async let first = outcome(
            of: Job<URL>.download(
                from: server.url("a"), to: folder.appendingPathComponent("a"), transport: .asyncHTTPClient(http)))
        async let second = outcome(
            of: Job<URL>.download(
                from: server.url("b"), to: folder.appendingPathComponent("b"), transport: .asyncHTTPClient(http)))
        let results = await [first, second]
        try await http.shutdown()

        for result in results { #expect(result.failureError == nil) }
        #expect(try Data(contentsOf: folder.appendingPathComponent("a")) == bodies[0])
        #expect(try Data(contentsOf: folder.appendingPathComponent("b")) == bodies[1])
        #expect(server.requests.count == 2, "a request queued again was sent once")
    }

    @Test func sixtyFourDownloadsAtOnceAllRunAndComplete() async throws {
        // The manager's own client: all 64 connect at once (the server answers none before it has
        // all 64 requests).
        let http = DownloadHTTPClient.make()
        let count = 64
        let all = Gate()
        let server = try ScriptedServer { request, index in
            if index == count - 1 { all.open() }
            let seed = Int(request.path.dropFirst()) ?? 0
            return .waiting(for: all, then: .respond(200, body: largePattern(128 * 1024, seed: seed)))
        }
        defer { server.stop() }
        // Only when the client would not open 64 connections: fail instead of hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { all.open() }
        let folder = try scratchFolder()

        let failures = await withTaskGroup(of: (any Error)?.self) { group in
            for seed in 0..<count {
                group.addTask {
                    let destination = folder.appendingPathComponent("\(seed)")
                    let result = await outcome(
                        of: Job<URL>.download(
                            from: server.url("\(seed)"), to: destination, transport: .asyncHTTPClient(http)))
                    if let error = result.failureError { return error }
                    return (try? Data(contentsOf: destination)) == largePattern(128 * 1024, seed: seed)
                        ? nil : DownloadError(kind: .inconsistentResponse("wrong bytes"), path: destination.path)
                }
            }
            return await group.reduce(into: [any Error]()) { if let error = $1 { $0.append(error) } }
        }
        try await http.shutdown()

        #expect(failures.isEmpty, "\(failures.map(\.localizedDescription))")
        #expect(server.requests.count == count)
    }
}
