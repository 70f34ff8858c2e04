import AsyncHTTPClient
import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import Testing

/// What either transport does with a server that refuses, redirects, fails, stalls or floods.
@Suite struct DownloadTransportTests {
    @Test(arguments: TransportKind.allCases)
    func aRefusedConnectionIsATransientTransportError(_ kind: TransportKind) async throws {
        // A port held by a socket that never listens: nothing can answer there.
        let refusing = try RefusingPort()
        let url = refusing.url("file")
        let destination = try scratchFolder().appendingPathComponent("refused.bin")

        let result = await outcome(of: Job<URL>.download(from: url, to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .cannotConnectToHost || error.code == .networkConnectionLost)
        #expect(TransientFailure.isTransient(error))
        #expect(error.localizedDescription.contains(url.absoluteString))
        #expect(!exists(destination))
    }

    @Test(arguments: TransportKind.allCases)
    func aStatusErrorKeepsTheStartOfItsBodyAndLeavesNoFile(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { _, _ in .respond(404, body: Data("no such file here".utf8)) }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("missing.bin")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("missing"), to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? HTTPStatusError)
        #expect(error.status == 404)
        #expect(error.bodyExcerpt == "no such file here")
        #expect(!exists(destination))
    }

    @Test(arguments: TransportKind.allCases)
    func aRedirectIsFollowedToTheFile(_ kind: TransportKind) async throws {
        let bytes = pattern(70_000, seed: 7)
        let server = try ScriptedServer { request, _ in
            request.path == "/old" ? .respond(302, headers: ["Location": "/new"]) : .respond(200, body: bytes)
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("moved.bin")

        _ = try await Job<URL>.download(from: server.url("old"), to: destination, transport: kind.transport).value

        #expect(try Data(contentsOf: destination) == bytes)
        #expect(server.requests.map(\.path) == ["/old", "/new"])
    }

    @Test(arguments: TransportKind.allCases)
    func aRedirectLoopFailsAsTooManyRedirects(_ kind: TransportKind) async throws {
        let server = try ScriptedServer { request, _ in
            .respond(302, headers: ["Location": request.path == "/a" ? "/b" : "/a"])
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("loop.bin")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("a"), to: destination, transport: kind.transport))

        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .httpTooManyRedirects)
        #expect(!exists(destination))
    }

    @Test(arguments: TransportKind.allCases)
    func aWholeBodyThatSaysItIsAPartFailsAndKeepsThePart(_ kind: TransportKind) async throws {
        // A server that ignores `Range` and `If-Range` and answers 200 with the rest of the file and
        // its Content-Range: neither the whole file nor a piece to splice without a 206.
        let full = pattern(1000, seed: 5)
        let server = try ScriptedServer { _, _ in
            .respond(200, headers: ["Content-Range": "bytes 500-999/1000", "ETag": "\"E\""], body: full.suffix(500))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let fresh = folder.appendingPathComponent("fresh.bin")
        let resumed = folder.appendingPathComponent("resumed.bin")
        try leavePart(full.prefix(500), of: server.url("f"), at: resumed, etag: "\"E\"", total: 1000)

        let first = await outcome(of: Job<URL>.download(from: server.url("f"), to: fresh, transport: kind.transport))
        let second = await outcome(of: Job<URL>.download(from: server.url("f"), to: resumed, transport: kind.transport))

        for result in [first, second] {
            let error = try #require(result.failureError as? DownloadError)
            #expect(error.localizedDescription.contains("a 200 with Content-Range bytes 500-999/1000"))
        }
        #expect(!exists(fresh) && !exists(resumed))
        #expect(try Data(contentsOf: URL(fileURLWithPath: resumed.path + ".part")) == full.prefix(500))
    }

    @Test(arguments: TransportKind.allCases)
    func aHundredKilobyteHeaderFailsTheDownloadWithoutACrash(_ kind: TransportKind) async throws {
        let header = "HTTP/1.1 200 OK\r\nX-Flood: " + String(repeating: "a", count: 100_000) + "\r\n"
        let server = try ScriptedServer { _, _ in
            .raw(Data((header + "Content-Length: 5\r\nConnection: close\r\n\r\nhello").utf8))
        }
        defer { server.stop() }
        let destination = try scratchFolder().appendingPathComponent("flood.bin")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("flood"), to: destination, transport: kind.transport))

        // Either transport may accept or refuse such a head; it must not trap, and a file, if any,
        // holds exactly the body.
        switch result {
        case .success: #expect(try Data(contentsOf: destination) == Data("hello".utf8))
        case .failure: #expect(!exists(destination))
        }
    }

    @Test func aStalledTransferTimesOutAsTransient() async throws {
        let release = Gate()
        defer { release.open() }
        let bytes = pattern(50_000)
        let server = try ScriptedServer { _, _ in .stall(body: bytes, sent: 10_000, until: release) }
        defer { server.stop() }
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .milliseconds(300)))
        configuration.decompression = .disabled
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let destination = try scratchFolder().appendingPathComponent("stalled.bin")

        let result = await outcome(
            of: Job<URL>.download(from: server.url("stalled"), to: destination, transport: .asyncHTTPClient(http)))
        try await http.shutdown()

        let error = try #require(result.failureError as? TransportError)
        #expect(error.code == .timedOut)
        #expect(TransientFailure.isTransient(error))
        #expect(fileSize(URL(fileURLWithPath: destination.path + ".part")) == 10_000, "kept to resume from")
    }

    @Test func theManagersOwnClientFollowsSetMaxConcurrent() async throws {
        // 40 files from one host, at first 2 at once, then 32: the server answers none of the first
        // 32 requests before it has them all, so all 32 must be under way at once. A client that
        // kept the first width would hold 30 in its pool until they failed as timed out.
        let width = 32
        let all = Gate()
        let server = try ScriptedServer { request, index in
            if index == width - 1 { all.open() }
            let reply = ScriptedServer.Reply.respond(200, body: pattern(20_000, seed: request.path.count))
            return index < width ? .waiting(for: all, then: reply) : reply
        }
        defer { server.stop() }
        // Only when the manager never has 32 under way: fail instead of hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { all.open() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log, maxConcurrent: 2),
            resultQueue: log.queue)
        defer { manager.close() }

        try manager.add(contentsOf: (0..<40).map { .init(url: server.url("file-\($0)")) })
        manager.setMaxConcurrent(width)
        let summary = await manager.waitUntilFinished()

        #expect(summary.allSucceeded, "\(summary.failed.map(\.state))")
        #expect(summary.completed.count == 40)
        #expect(server.requests.count == 40)
    }

    @Test func downloadsRedirectedFromSeveralHostsToOneAllComplete() async throws {
        // Four hosts (ports), at most 2 downloads each, all redirected to one CDN host: 8 at once
        // there, though each host has at most 2. The CDN answers none before it has all 8.
        let width = 8
        let all = Gate()
        let cdn = try ScriptedServer { request, index in
            if index == width - 1 { all.open() }
            let reply = ScriptedServer.Reply.respond(200, body: pattern(20_000, seed: request.path.count))
            return index < width ? .waiting(for: all, then: reply) : reply
        }
        defer { cdn.stop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { all.open() }
        let origins = try (0..<4).map { _ in
            try ScriptedServer { request, _ in
                .respond(302, headers: ["Location": cdn.url(String(request.path.dropFirst())).absoluteString])
            }
        }
        defer { for origin in origins { origin.stop() } }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: try scratchFolder(), configuration: testConfiguration(log, maxConcurrent: width, maxPerHost: 2),
            resultQueue: log.queue)
        defer { manager.close() }

        try manager.add(
            contentsOf: origins.indices.flatMap { host in
                (0..<3).map { file in .init(url: origins[host].url("file-\(host)-\(file)")) }
            })
        let summary = await manager.waitUntilFinished()

        #expect(summary.allSucceeded, "\(summary.failed.map(\.state))")
        #expect(summary.completed.count == 12)
        #expect(cdn.requests.count == 12)
    }
}
