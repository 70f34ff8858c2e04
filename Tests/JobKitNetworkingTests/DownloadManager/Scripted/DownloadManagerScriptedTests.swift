import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// The manager on its seams: a scripted transport (no sockets) and a `TestScheduler` (no real time):
/// what the test moves is all that happens.
@Suite struct DownloadManagerScriptedTests {
    private func manager(
        _ transport: ScriptedTransport, _ scheduler: WatchedScheduler, folder: URL, maxConcurrent: Int = 8
    ) throws -> DownloadManager {
        let log = UpdateLog()
        var configuration = testConfiguration(
            log, maxConcurrent: maxConcurrent,
            retry: DownloadManager.RetryPolicy(attempts: 3, backoff: .constant(.seconds(10))))
        configuration.scheduler = scheduler
        configuration.httpTransport = transport
        return try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
    }

    /// A hundred downloads at once, each refused once with a 503 asking for a minute: nothing is asked
    /// again until the scheduler's minute has passed, then every file arrives byte-exact. (A retry's
    /// wait keeps its slot: with fewer slots than items, the rest would wait for the next minute.)
    @Test func aHundredRetriesWaitForTheSchedulersMinuteAndThenComplete() async throws {
        let answered = LockedBox<Set<String>>.make([])
        let transport = ScriptedTransport { request, _ in
            let name = request.url!.lastPathComponent
            return answered.withLock({ $0.insert(name).inserted })
                ? .init(status: 503, headers: ["Retry-After": "60"])
                : .init(status: 200, body: pattern(1_000 + name.count))
        }
        let scheduler = WatchedScheduler()
        let folder = try scratchFolder()
        let manager = try manager(transport, scheduler, folder: folder, maxConcurrent: 100)
        defer { manager.close() }
        let names = (0..<100).map { "file-\($0).bin" }
        for name in names { try manager.add(URL(string: "http://scripted.test/\(name)")!) }

        await scheduler.until("every first answer is a 503 waiting for the scheduler") {
            $0.filter { $0 == .seconds(60) }.count == 100
        }
        #expect(transport.requests.count == 100)
        #expect(manager.totals.completed == 0)
        scheduler.advance(by: .seconds(60))
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.count == 100)
        #expect(transport.requests.count == 200)
        for name in names {
            #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == pattern(1_000 + name.count))
        }
    }

    /// A body dropped mid-way resumes where the `.part` ends, with the validator, after the backoff.
    @Test func aDroppedBodyResumesWithARangeAfterTheBackoff() async throws {
        let bytes = pattern(200_000)
        let transport = ScriptedTransport { request, index in
            if index == 0 { return .init(status: 200, headers: ["ETag": "\"v\""], body: bytes, sent: 70_000) }
            let start = Int(request.value(forHTTPHeaderField: "Range")?.dropFirst(6).dropLast() ?? "0") ?? 0
            return .init(
                status: 206, headers: ["ETag": "\"v\"", "Content-Range": "bytes \(start)-199999/200000"],
                body: bytes.dropFirst(start))
        }
        let scheduler = WatchedScheduler()
        let folder = try scratchFolder()
        let manager = try manager(transport, scheduler, folder: folder)
        defer { manager.close() }
        try manager.add(URL(string: "http://scripted.test/big.bin")!)

        await scheduler.until("the retry waits for the backoff") { $0.contains(.seconds(10)) }
        #expect(transport.requests.count == 1)
        scheduler.advance(by: .seconds(10))
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(try Data(contentsOf: folder.appendingPathComponent("big.bin")) == bytes)
        let second = try #require(transport.requests.last)
        #expect(second.value(forHTTPHeaderField: "Range") == "bytes=70000-")
        #expect(second.value(forHTTPHeaderField: "If-Range") == "\"v\"")
    }
}
