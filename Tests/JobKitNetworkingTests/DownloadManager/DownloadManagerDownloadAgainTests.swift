import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// `downloadAgain`: a completed item fetched again, from a new URL, keeps its file and its completed
/// record until the new file takes the name — a download that fails, is cancelled or is cut short
/// leaves the next manager the item as it was.
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerDownloadAgainTests {
    static let old = pattern(30_000, seed: 1)
    static let new = pattern(50_000, seed: 2)

    /// `/v1.bin` serves `old`, `/v2.bin` `new`, `/missing.bin` a 404, and `/cut.bin` the first
    /// 20,000 bytes of `new` before the connection drops.
    static func server() throws -> ScriptedServer {
        try ScriptedServer { request, _ in
            switch request.path {
            case "/v1.bin": .respond(200, headers: ["ETag": "\"v1\""], body: old)
            case "/v2.bin": .respond(200, headers: ["ETag": "\"v2\""], body: new)
            case "/cut.bin": .drop(headers: ["ETag": "\"v2\""], body: new, sent: 20_000)
            default: .respond(404)
            }
        }
    }

    /// `/v1.bin` serves `old`; every other path waits for `gate`.
    static func server(holdingAllBut gate: Gate) throws -> ScriptedServer {
        try ScriptedServer { request, _ in
            request.path == "/v1.bin" ? .respond(200, body: old) : .waiting(for: gate, then: .respond(200))
        }
    }

    private func manager(_ folder: URL, _ log: UpdateLog) throws -> DownloadManager {
        try DownloadManager(
            directory: folder, configuration: testConfiguration(log), resultQueue: log.queue, onUpdate: log.handler)
    }

    /// A manager on `folder` whose `a.bin` downloaded `old` from `/v1.bin`, and its item.
    private func completed(in folder: URL, server: ScriptedServer) async throws -> (DownloadManager, ItemID, UpdateLog)
    {
        let log = UpdateLog()
        let manager = try manager(folder, log)
        let id = try manager.add(server.url("v1.bin"), name: "a.bin")
        await log.waitForDrain()
        #expect(manager.item(id)?.state == .completed)
        return (manager, id, log)
    }

    typealias ItemID = DownloadManager.ItemID

    private func file(_ folder: URL) throws -> Data { try Data(contentsOf: folder.appendingPathComponent("a.bin")) }

    private func names(in folder: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
    }

    /// The item the next manager restores: its state and URL.
    private func restored(_ folder: URL) throws -> (DownloadManager.State, URL)? {
        let manager = try manager(folder, UpdateLog())
        defer { manager.close() }
        return manager.items.first.map { ($0.state, $0.url) }
    }

    @Test func aFailedDownloadAgainLeavesTheCompletedItemAndItsFileToTheNextManager() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let folder = try scratchFolder()
        let (manager, id, log) = try await completed(in: folder, server: server)

        try manager.downloadAgain(id, from: server.url("missing.bin"))
        await log.waitForDrain(count: 2)

        #expect(manager.item(id)?.state.failure?.status == 404, "the failure shows while this manager runs")
        #expect(try file(folder) == Self.old)
        manager.close()
        let (state, url) = try #require(try restored(folder))
        #expect(state == .completed)
        #expect(url == server.url("v1.bin"))
        #expect(try file(folder) == Self.old)
    }

    @Test func aDownloadAgainReplacesTheFileAndTheRecordOnceComplete() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let folder = try scratchFolder()
        let (manager, id, log) = try await completed(in: folder, server: server)

        try manager.downloadAgain(id, from: server.url("v2.bin"))
        await log.waitForDrain(count: 2)

        #expect(manager.item(id)?.state == .completed)
        #expect(manager.item(id)?.progress.received == Int64(Self.new.count))
        #expect(try file(folder) == Self.new)
        manager.close()
        let (state, url) = try #require(try restored(folder))
        #expect(state == .completed)
        #expect(url == server.url("v2.bin"))
        #expect(server.requests.map(\.path) == ["/v1.bin", "/v2.bin"])
    }

    @Test func aDownloadAgainCutShortLeavesTheItemCompletedAndItsPartIsCleaned() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let folder = try scratchFolder()
        let (manager, id, log) = try await completed(in: folder, server: server)

        try manager.downloadAgain(id, from: server.url("cut.bin"))
        await log.waitForDrain(count: 2)
        #expect(manager.item(id)?.state.failure?.kind == .network)
        #expect(try names(in: folder).contains("a.bin.part"), "kept to resume while this manager runs")
        manager.close()

        let (state, url) = try #require(try restored(folder))
        #expect(state == .completed)
        #expect(url == server.url("v1.bin"))
        #expect(try file(folder) == Self.old)
        #expect(!(try names(in: folder).contains("a.bin.part")), "a completed item resumes no .part")
    }

    @Test func aCancelledDownloadAgainLeavesTheCompletedItem() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try Self.server(holdingAllBut: gate)
        defer { server.stop() }
        let folder = try scratchFolder()
        let (manager, id, _) = try await completed(in: folder, server: server)

        try manager.downloadAgain(id, from: server.url("slow.bin"))
        try manager.cancel(id)
        #expect(manager.item(id)?.state == .cancelled)
        manager.close()

        let (state, url) = try #require(try restored(folder))
        #expect(state == .completed)
        #expect(url == server.url("v1.bin"))
        #expect(try file(folder) == Self.old)
    }

    @Test func removingAnItemDownloadedAgainForgetsIt() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try Self.server(holdingAllBut: gate)
        defer { server.stop() }
        let folder = try scratchFolder()
        let (manager, id, _) = try await completed(in: folder, server: server)

        try manager.downloadAgain(id, from: server.url("slow.bin"))
        try manager.remove(id, deletingFile: true)
        manager.close()

        #expect(try restored(folder) == nil)
        #expect(!(try names(in: folder).contains("a.bin")), "its file was the manager's")
    }

    @Test func downloadAgainRefusesAnUnknownItemANonHTTPURLAndAClosedManager() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let (manager, id, _) = try await completed(in: try scratchFolder(), server: server)
        let unknown = ItemID(rawValue: 42)
        #expect(throws: DownloadManagerError.unknownItem(unknown)) {
            try manager.downloadAgain(unknown, from: server.url("v2.bin"))
        }
        #expect(throws: DownloadManagerError.unsupportedURL("file:///etc/passwd")) {
            try manager.downloadAgain(id, from: URL(fileURLWithPath: "/etc/passwd"))
        }
        #expect(manager.item(id)?.state == .completed)
        #expect(manager.item(id)?.url == server.url("v1.bin"))
        manager.close()
        #expect(throws: DownloadManagerError.closed) { try manager.downloadAgain(id, from: server.url("v2.bin")) }
    }

    @Test func aFailedFlushAfterTheRenameOverTheOldFileIsJournaledAsTheFailureNotAsTheOldFile() async throws {
        // With `.system` durability the rename over the old file is flushed; when that fails, the rename
        // is undone (the new file back to its `.part`) and the old file is gone: its record must not
        // come back as if it were there.
        let world = MemoryDownloads(bytes: Self.new)
        let armed = LockedBox<Bool>.make(false)
        let manager = try world.open(
            durability: .system,
            afterFinishing: { _ in
                if armed.withLock({ $0 }) { world.disk.fail(.folderSync, name: world.folder.path, with: EIO) }
            })
        let id = try manager.add(world.url)
        _ = await manager.waitUntilFinished()
        #expect(manager.item(id)?.state == .completed)
        armed.withLock { $0 = true }

        try manager.downloadAgain(id, from: world.url)
        _ = await manager.waitUntilFinished()

        #expect(manager.item(id)?.state.failure != nil)
        #expect(world.disk.contents(of: "big.bin", in: world.folder.path) == nil, "the flush failed after the rename")
        let journal = try DownloadJournal.parse(
            try #require(world.disk.contents(of: DownloadJournal.fileName, in: world.folder.path)))
        #expect(
            !journal.entries.contains { if case .completed = $0.status { true } else { false } }, "\(journal.entries)")
        manager.close()
    }

    @Test func aCrashBetweenTheNewFilesFinishingRecordAndItsRenameRestoresTheCompletedFile() async throws {
        // The journal has the new URL's `finishing`; the old file is under the name and the new one in
        // the `.part`: the next manager restores the item completed with the old file, as it was.
        let world = MemoryDownloads(bytes: Self.new)
        let armed = LockedBox<Bool>.make(false)
        let manager = try world.open(afterFinishing: { _ in
            if armed.withLock({ $0 }) { world.disk.planCrash(afterOperations: 0, powerLoss: false) }
        })
        let id = try manager.add(world.url)
        _ = await manager.waitUntilFinished()
        armed.withLock { $0 = true }
        let other = URL(string: "http://scripted.test/mirror/big.bin")!

        try manager.downloadAgain(id, from: other)
        _ = await manager.waitUntilFinished()
        #expect(world.disk.takeCrash() != nil, "the process died before the rename")
        manager.abandonForTesting()

        let next = try world.open()
        defer { next.close() }
        #expect(next.item(id)?.state == .completed)
        #expect(next.item(id)?.url == world.url, "the old file's URL")
        #expect(world.disk.contents(of: "big.bin", in: world.folder.path) == Self.new)
        #expect(!world.disk.names(in: world.folder.path).contains("big.bin.part"), "the new file's .part is dropped")
    }
}
