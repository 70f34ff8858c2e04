import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A download over several connections (`Request.connections`) from a scripted server: what makes it
/// split, start over, or stay on one connection.
@Suite(.timeLimit(.minutes(10)))
struct SegmentedDownloadTests {
    private static let body = largePattern(4 << 20, seed: 25)

    /// Answers `bytes=A-B` and `bytes=A-` from `body` with `etag(request)`; a request without
    /// `Range`, or any when `ranges` is false, gets the whole body with `200`.
    private static func serve(
        ranges: Bool = true, etag: @escaping @Sendable (ScriptedServer.Request) -> String = { _ in "\"v1\"" },
        ranged: @escaping @Sendable (ScriptedServer.Request) -> ScriptedServer.Reply? = { _ in nil }
    ) throws -> ScriptedServer {
        try ScriptedServer { request, _ in
            let tag = etag(request)
            guard ranges, let range = request.headers["range"], range.hasPrefix("bytes=") else {
                return .respond(200, headers: ["ETag": tag, "Accept-Ranges": "bytes"], body: body)
            }
            if let reply = ranged(request) { return reply }
            let bounds = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            let first = Int(bounds[0]) ?? 0
            let last = bounds.count > 1 ? Int(bounds[1]) ?? (body.count - 1) : body.count - 1
            return .respond(
                206, headers: ["ETag": tag, "Content-Range": "bytes \(first)-\(last)/\(body.count)"],
                body: body.subdata(in: first..<(last + 1)))
        }
    }

    private func download(from server: ScriptedServer, connections: Int = 4) async throws -> (URL, DownloadManager) {
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log, maxConcurrent: 8), resultQueue: log.queue,
            onUpdate: log.handler)
        _ = try manager.add(contentsOf: [.init(url: server.url("file.bin"), connections: connections)])
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded, "\(manager.items.map(\.state))")
        return (folder, manager)
    }

    @Test func aFileIsSplitIntoRangesAndArrivesByteExact() async throws {
        let server = try Self.serve()
        defer { server.stop() }
        let (folder, manager) = try await download(from: server)
        defer { manager.close() }
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == Self.body)
        let ranges = server.requests.compactMap { $0.headers["range"] }
        #expect(ranges.first == "bytes=0-")
        #expect(ranges.count == 4, "\(ranges)")
        #expect(server.requests.dropFirst().allSatisfy { $0.headers["if-range"] == "\"v1\"" })
    }

    @Test func aSegmentAnsweredWholeStartsTheFileOverOnOneConnection() async throws {
        let server = try Self.serve(ranged: { request in
            guard request.headers["if-range"] != nil else { return nil }
            return .respond(200, headers: ["ETag": "\"v1\""], body: Self.body)
        })
        defer { server.stop() }
        let (folder, manager) = try await download(from: server)
        defer { manager.close() }
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == Self.body)
        // A range asked before the start over may reach the server after it: not necessarily the last.
        #expect(server.requests.dropFirst().contains { $0.headers["range"] == nil }, "started over without a range")
    }

    @Test func aSegmentOfAnotherVersionStartsTheFileOver() async throws {
        // The file changes once it was split: every answer after the first is of version 2.
        let changed = try Self.serve(etag: { request in
            request.headers["range"] == "bytes=0-" ? "\"v1\"" : "\"v2\""
        })
        defer { changed.stop() }
        let (folder, manager) = try await download(from: changed)
        defer { manager.close() }
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == Self.body)
        // A range asked before the start over may reach the server after it: not necessarily the last.
        #expect(changed.requests.dropFirst().contains { $0.headers["range"] == nil }, "started over without a range")
        #expect(changed.requests.count >= 3)
    }

    @Test func aFileTooShortToSplitIsWrittenFromTheFirstAnswer() async throws {
        let short = largePattern(1 << 20, seed: 26)
        let server = try ScriptedServer { request, _ in
            guard request.headers["range"] == "bytes=0-" else {
                return .respond(200, headers: ["ETag": "\"v1\""], body: short)
            }
            return .respond(
                206, headers: ["ETag": "\"v1\"", "Content-Range": "bytes 0-\(short.count - 1)/\(short.count)"],
                body: short)
        }
        defer { server.stop() }
        let (folder, manager) = try await download(from: server)
        defer { manager.close() }
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == short)
        #expect(server.requests.map { $0.headers["range"] } == ["bytes=0-"], "no second request")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("file.bin.part.meta").path))
    }

    @Test func aServerWithoutRangesIsReadOnOneConnection() async throws {
        let server = try Self.serve(ranges: false)
        defer { server.stop() }
        let (folder, manager) = try await download(from: server)
        defer { manager.close() }
        #expect(try Data(contentsOf: folder.appendingPathComponent("file.bin")) == Self.body)
        // The first request, refused a range, falls back to one plain request.
        #expect(server.requests.map { $0.headers["range"] } == ["bytes=0-", nil])
    }

    @Test func connectionsTakeTheFreeSlotsAtLeastOne() {
        var scheduler = HostScheduler(limit: 6, perHost: 3)
        let ids = (1...3).map { DownloadManager.ItemID(rawValue: $0) }
        for id in ids { scheduler.enqueue(id, host: "h") }
        let first = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 })
        #expect(first?.slots == 3, "the host's limit")
        let none = scheduler.claimNext(isBlocked: { _ in false })
        #expect(none == nil, "the host is full")
        scheduler.runEnded(host: "h", slots: 3)
        let second = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 2 })
        #expect(second?.slots == 2)
        let third = scheduler.claimNext(isBlocked: { _ in false }, connections: { _ in 4 })
        #expect(third?.slots == 1)
        #expect(scheduler.runningCount == 3)
    }
}
