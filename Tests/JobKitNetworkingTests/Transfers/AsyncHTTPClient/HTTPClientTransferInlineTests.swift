import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import JobKitNetworking

/// Where a download's file work runs through AsyncHTTPClient: on the connection's event loop while
/// it is quick, on the blocking pool once it was not, or when it may not be.
@Suite struct HTTPClientTransferInlineTests {
    /// Whether each callback of a download ran on an event loop, in order: its response's, then
    /// each body part's.
    private final class Places: Sendable {
        private let recorded = LockedBox<[Bool]>.make([])
        var all: [Bool] { recorded.withLock { $0 } }
        func note() { recorded.withLock { $0.append(MultiThreadedEventLoopGroup.currentEventLoop != nil) } }
    }

    /// Downloads a 512 KiB file with hooks that note where each callback runs; `slowResponse` holds
    /// the response's callback 10 ms, as a disk that is behind would.
    private func download(durability: Durability, slowResponse: Bool) async throws -> [Bool] {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        let http = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        let body = largePattern(512 * 1024, seed: 5)
        let server = try ScriptedServer { _, _ in .respond(200, headers: ["ETag": "\"v1\""], body: body) }
        defer { server.stop() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("file.bin")
        let places = Places()
        let hooks = DownloadHooks(
            began: { _, _ in
                places.note()
                if slowResponse { usleep(10_000) }
            },
            received: { _ in places.note() },
            beforeFinalize: { _, _ in })
        let result = await outcome(
            of: Job<URL>.download(
                from: server.url("file.bin"), to: destination, transport: DownloadTransport.asyncHTTPClient(http),
                blindResume: false, durability: durability, hooks: hooks))
        try await http.shutdown()
        try await group.shutdownGracefully()
        #expect(result.failureError == nil)
        #expect(try Data(contentsOf: destination) == body, "written whole and in order")
        return places.all
    }

    @Test func aFreshDownloadsResponseIsHandledOnTheEventLoop() async throws {
        let places = try await download(durability: .process, slowResponse: false)
        #expect(places.count >= 2)
        #expect(places.first == true, "nothing waited for the pool: no hop to it and back")
    }

    @Test func workThatTookLongSendsTheRestOfTheTransferToThePool() async throws {
        let places = try await download(durability: .process, slowResponse: true)
        #expect(places.count >= 2)
        #expect(places.first == true)
        #expect(places.dropFirst().allSatisfy { !$0 }, "after a slow callback, none ran on the event loop")
    }

    @Test func aDownloadThatFlushesNeverWritesOnTheEventLoop() async throws {
        let places = try await download(durability: .system, slowResponse: false)
        #expect(places.count >= 2)
        #expect(places.allSatisfy { !$0 }, "a flush waits for the disk: never on an event loop")
    }
}
