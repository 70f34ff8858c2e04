import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A `.part` is the item's, not its URL's: `replaceURL` and the `urlRefresher` move an item to a new
/// URL, and its `.part` resumes there when the validator matches — and starts over when it does not.
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerURLTests {
    static let bytes = pattern(100_000, seed: 3)

    /// A server whose `/old/` path sends the first `sent` bytes (ETag `"v1"`) and then refuses with
    /// `refusal`, and whose `/new/` path serves `body` with `etag`, honouring `Range` only under an
    /// `If-Range` that matches it (as a real server does).
    static func server(
        refusal: Int = 403, sent: Int = 40_000, newBody: Data = bytes, newETag: String = "\"v1\""
    ) throws -> ScriptedServer {
        try ScriptedServer { request, index in
            if request.path.hasPrefix("/old/") {
                guard index == 0 else { return .respond(refusal) }
                return .drop(headers: ["ETag": "\"v1\""], body: bytes, sent: sent)
            }
            return ranged(request, body: newBody, etag: newETag)
        }
    }

    /// `body` as a server with `etag` answers `request`: a 206 for a `Range` whose `If-Range` matches
    /// (or is absent), else the whole body.
    static func ranged(_ request: ScriptedServer.Request, body: Data, etag: String) -> ScriptedServer.Reply {
        if let range = request.headers["range"], request.headers["if-range"].map({ $0 == etag }) ?? true,
            range.hasPrefix("bytes="), range.hasSuffix("-"), let start = Int(range.dropFirst(6).dropLast()),
            start < body.count
        {
            return .respond(
                206,
                headers: ["ETag": etag, "Content-Range": "bytes \(start)-\(body.count - 1)/\(body.count)"],
                body: body.subdata(in: start..<body.count))
        }
        return .respond(200, headers: ["ETag": etag], body: body)
    }

    private func manager(
        _ folder: URL, _ log: UpdateLog, refresher: (@Sendable (DownloadManager.Item, Int) async -> URL?)? = nil
    ) throws -> DownloadManager {
        var configuration = testConfiguration(log)
        configuration.urlRefresher = refresher
        return try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
    }

    @Test func aRefreshedURLResumesThePartWhenTheValidatorMatches() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let asked = LockedBox<[(URL, Int)]>.make([])
        let manager = try manager(folder, log) { item, status in
            asked.withLock { $0.append((item.url, status)) }
            return server.url("new/a.bin?signature=fresh")
        }
        defer { manager.close() }
        let id = try manager.add(server.url("old/a.bin"), name: "a.bin")
        await log.waitForDrain()
        #expect(manager.item(id)?.state.failure?.kind == .network, "the connection dropped after 40,000 bytes")
        try manager.resume(id)
        await log.waitForDrain(count: 2)

        #expect(manager.item(id)?.state == .completed)
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == Self.bytes)
        #expect(asked.withLock { $0.map(\.1) } == [403])
        #expect(asked.withLock { $0.map(\.0) } == [server.url("old/a.bin")])
        let requests = server.requests
        #expect(requests.map(\.path) == ["/old/a.bin", "/old/a.bin", "/new/a.bin?signature=fresh"])
        #expect(requests[2].headers["range"] == "bytes=40000-", "the .part resumes from the new URL")
        #expect(requests[2].headers["if-range"] == "\"v1\"")
        #expect(manager.item(id)?.url == server.url("new/a.bin?signature=fresh"))
    }

    @Test func aRefreshedURLWithAnotherValidatorStartsOver() async throws {
        let other = pattern(70_000, seed: 9)
        let server = try Self.server(newBody: other, newETag: "\"v2\"")
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try manager(folder, log) { _, _ in server.url("new/a.bin") }
        defer { manager.close() }
        let id = try manager.add(server.url("old/a.bin"), name: "a.bin")
        await log.waitForDrain()
        try manager.resume(id)
        await log.waitForDrain(count: 2)

        #expect(manager.item(id)?.state == .completed)
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == other, "no byte of the old version")
        #expect(server.requests.last?.headers["if-range"] == "\"v1\"", "the resume was offered, and refused")
    }

    @Test func a401WithoutARefresherFailsAsBefore() async throws {
        let server = try ScriptedServer { _, _ in .respond(401, body: Data("log in".utf8)) }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try manager(try scratchFolder(), log)
        defer { manager.close() }
        let id = try manager.add(server.url("a.bin"))
        await log.waitForDrain()
        let failure = try #require(manager.item(id)?.state.failure)
        #expect(failure.kind == .httpStatus)
        #expect(failure.status == 401)
        #expect(server.requests.count == 1)
    }

    @Test func aRefresherThatGivesNothingOrARefusedURLFailsTheItemOnce() async throws {
        let server = try ScriptedServer { _, _ in .respond(410) }
        defer { server.stop() }
        let log = UpdateLog()
        let calls = LockedBox.make(0)
        let manager = try manager(try scratchFolder(), log) { item, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            return call == 1 ? server.url("still-gone.bin") : nil
        }
        defer { manager.close() }
        let id = try manager.add(server.url("gone.bin"))
        await log.waitForDrain()
        #expect(manager.item(id)?.state.failure?.status == 410)
        #expect(calls.withLock { $0 } == 1, "a refreshed URL refused at once is not refreshed again")
        #expect(server.requests.map(\.path) == ["/gone.bin", "/still-gone.bin"])

        try manager.resume(id)  // a new run may ask again: this time the refresher gives nothing
        await log.waitForDrain(count: 2)
        #expect(calls.withLock { $0 } == 2)
        #expect(manager.item(id)?.state.failure?.status == 410)
    }

    /// A URL refresher that never answers: it waits until its task is cancelled, then gives a URL no
    /// test serves. It counts the questions and the cancellations, which a test can wait for.
    final class StalledRefresher: Sendable {
        private struct Counts: Sendable {
            var asked = 0
            var cancelled = 0
        }

        private let counts = Watched(Counts())
        var asked: Int { counts.current.asked }
        var cancelled: Int { counts.current.cancelled }

        func refresh(_ item: DownloadManager.Item, _ status: Int) async -> URL? {
            counts.withLock { $0.asked += 1 }
            // An iteration of a stream nobody feeds ends only when the task is cancelled.
            let (never, feed) = AsyncStream<Never>.makeStream()
            for await _ in never {}
            feed.finish()
            if Task.isCancelled { counts.withLock { $0.cancelled += 1 } }
            return URL(string: "https://late.invalid/late.bin")
        }

        /// Suspends until the refresher was asked `count` times.
        func untilAsked(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
            await counts.until("the refresher was asked", sourceLocation: sourceLocation) { $0.asked >= count }
        }

        /// Suspends until `count` of the refresher's tasks were cancelled.
        func untilCancelled(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
            await counts.until("the refresher's task was cancelled", sourceLocation: sourceLocation) {
                $0.cancelled >= count
            }
        }
    }

    /// Runs `onRelease` when it is released: kept by what a test watches the release of.
    final class ReleaseSentinel: Sendable {
        private let onRelease: @Sendable () -> Void
        init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }
        deinit { onRelease() }
    }

    /// What is done to an item while the refresher is asked for its URL.
    enum ControlDuringRefresh: CaseIterable, Sendable {
        case replaceURL, suspendThenResume, cancelThenResume, removeThenAddAgain
    }

    @Test(arguments: ControlDuringRefresh.allCases)
    func aControlWhileTheRefresherHangsTakesEffectAtOnceAndDropsItsAnswer(_ control: ControlDuringRefresh)
        async throws
    {
        // `/expired.bin` is refused the first time, `/fresh.bin` never.
        let server = try ScriptedServer { request, index in
            if request.path == "/expired.bin", index == 0 { return .respond(403) }
            return .respond(200, body: Self.bytes)
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let refresher = StalledRefresher()
        let manager = try manager(folder, UpdateLog(), refresher: refresher.refresh)
        defer { manager.close() }
        var id = try manager.add(server.url("expired.bin"), name: "a.bin")
        await refresher.untilAsked(1)
        #expect(refresher.asked == 1)
        #expect(manager.item(id)?.state == .running, "it keeps its slot while the refresher runs")

        switch control {
        case .replaceURL:
            try manager.replaceURL(id, with: server.url("fresh.bin"))
        case .suspendThenResume:
            try manager.suspend(id)
            #expect(manager.item(id)?.state == .suspended)
            try manager.resume(id)
        case .cancelThenResume:
            try manager.cancel(id)
            #expect(manager.item(id)?.state == .cancelled)
            try manager.resume(id)
        case .removeThenAddAgain:
            try manager.remove(id)
            #expect(manager.item(id) == nil)
            id = try manager.add(server.url("expired.bin"), name: "a.bin")
        }
        await manager.until("it completed", item: id) { $0.state == .completed }
        await refresher.untilCancelled(1)
        #expect(refresher.cancelled == 1)

        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == Self.bytes)
        let second = control == .replaceURL ? "/fresh.bin" : "/expired.bin"
        #expect(server.requests.map(\.path) == ["/expired.bin", second])
        #expect(manager.item(id)?.url == server.url(String(second.dropFirst())), "the late answer was dropped")
        #expect(refresher.asked == 1)
    }

    @MainActor @Test func closingCancelsAHangingRefresherAndLetsGoOfTheManager() async throws {
        let server = try ScriptedServer { _, _ in .respond(403) }
        defer { server.stop() }
        let refresher = StalledRefresher()
        weak var released: DownloadManager?
        var id: DownloadManager.ItemID?
        // The manager keeps its refresher for its lifetime: the sentinel the closure holds goes with it.
        let sentinelReleased = Watched(false)
        do {
            let sentinel = ReleaseSentinel { sentinelReleased.withLock { $0 = true } }
            let manager = try manager(try scratchFolder(), UpdateLog()) { [sentinel] item, status in
                withExtendedLifetime(sentinel) {}
                return await refresher.refresh(item, status)
            }
            released = manager
            id = try manager.add(server.url("expired.bin"))
            await refresher.untilAsked(1)
            #expect(refresher.asked == 1)
            manager.close()
            #expect(throws: DownloadManagerError.closed) { try manager.resume(id!) }
        }
        await refresher.untilCancelled(1)
        #expect(refresher.cancelled == 1)
        await sentinelReleased.until("the manager let go of its refresher") { $0 }
        #expect(released == nil, "the manager was released")
        #expect(server.requests.count == 1)
    }

    @Test func replaceURLRestartsARunningItemFromTheNewURLKeepingItsPart() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try ScriptedServer { request, _ in
            if request.path.hasPrefix("/old/") {
                return .stall(body: Self.bytes, sent: 50_000, until: gate, headers: ["ETag": "\"v1\""])
            }
            return Self.ranged(request, body: Self.bytes, etag: "\"v1\"")
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        let log = UpdateLog()
        let manager = try manager(folder, log)
        defer { manager.close() }
        let id = try manager.add(server.url("old/a.bin"), name: "a.bin")
        await manager.until("half of it arrived", item: id) { $0.progress.received == 50_000 }
        #expect(fileSize(folder.appendingPathComponent("a.bin.part")) == 50_000)
        try manager.replaceURL(id, with: server.url("new/a.bin"))
        await log.waitForDrain()

        #expect(manager.item(id)?.state == .completed)
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == Self.bytes)
        #expect(server.requests.map(\.path) == ["/old/a.bin", "/new/a.bin"])
        #expect(server.requests.last?.headers["range"] == "bytes=50000-")
    }

    @Test func aReplacedURLIsJournaledAndARestoreUsesIt() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try ScriptedServer { request, _ in
            if request.path == "/old" { return .waiting(for: gate, then: .respond(500)) }
            return Self.ranged(request, body: Self.bytes, etag: "\"v1\"")
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        do {
            let manager = try manager(folder, UpdateLog())
            let id = try manager.add(server.url("old"), name: "a.bin")
            try manager.suspend(id)
            try manager.replaceURL(id, with: server.url("a.bin"))
            #expect(manager.item(id)?.url == server.url("a.bin"))
            #expect(manager.item(id)?.state == .suspended)
            manager.close()
            #expect(throws: DownloadManagerError.closed) { try manager.replaceURL(id, with: server.url("old")) }
        }
        let log = UpdateLog()
        let manager = try manager(folder, log)
        defer { manager.close() }
        let id = try #require(manager.items.first?.id)
        #expect(manager.item(id)?.url == server.url("a.bin"))
        try manager.resume(id)
        await log.waitForDrain()
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == Self.bytes)
        #expect(server.requests.last?.path == "/a.bin")
    }

    @Test func replaceURLRefusesAnUnknownItemAndANonHTTPURL() throws {
        let log = UpdateLog()
        let manager = try manager(try scratchFolder(), log)
        defer { manager.close() }
        let unknown = DownloadManager.ItemID(rawValue: 42)
        #expect(throws: DownloadManagerError.unknownItem(unknown)) {
            try manager.replaceURL(unknown, with: URL(string: "https://example.com/a")!)
        }
        let id = try manager.add(URL(string: "https://expired.invalid/a.bin")!)
        #expect(throws: DownloadManagerError.unsupportedURL("file:///etc/passwd")) {
            try manager.replaceURL(id, with: URL(fileURLWithPath: "/etc/passwd"))
        }
        #expect(manager.item(id)?.url == URL(string: "https://expired.invalid/a.bin")!)
    }

    @Test func aPlantedURLRecordThatIsNotHTTPIsRefusedAndTheItemKeepsItsURL() throws {
        let folder = try scratchFolder()
        let lines = [
            #"{"format":"jobkit-downloads","next":2,"version":1}"#,
            #"{"id":1,"name":"a.bin","op":"add","url":"https://example.com/a.bin"}"#,
            #"{"id":1,"op":"state","state":"suspended"}"#,
            #"{"id":1,"op":"url","url":"file:///etc/shadow"}"#,
        ]
        try Data((lines.joined(separator: "\n") + "\n").utf8)
            .write(to: folder.appendingPathComponent(".jobkit-downloads.journal"))
        let manager = try manager(folder, UpdateLog())
        defer { manager.close() }
        #expect(manager.items.map(\.url) == [URL(string: "https://example.com/a.bin")!])
        #expect(manager.journalProblems.count == 1)
        #expect(manager.journalProblems.first?.contains("is not http(s)") == true)
    }
}
