import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// What `Durability` flushes to disk: nothing for `.process`, the file, its folder and the journal
/// for `.system`.
@Suite struct DurabilityTests {
    /// The paths under `folder` flushed so far (recording is started the first time).
    func flushed(under folder: URL) -> [String] {
        let prefix = folder.standardizedFileURL.path
        return DiskSync.recorded.withLock { recorded in
            if recorded == nil { recorded = [] }
            return recorded!.filter { $0.hasPrefix(prefix) }
        }
    }

    func download(durability: Durability) async throws -> (folder: URL, flushed: [String]) {
        let bytes = pattern(30_000)
        let server = try ScriptedServer { _, _ in .respond(200, body: bytes) }
        defer { server.stop() }
        let folder = try scratchFolder()
        #expect(flushed(under: folder).isEmpty)
        let log = UpdateLog()
        var configuration = testConfiguration(log)
        configuration.durability = durability
        let manager = try DownloadManager(
            directory: folder, configuration: configuration, resultQueue: log.queue, onUpdate: log.handler)
        try manager.add(server.url("a.bin"))
        let summary = await manager.waitUntilFinished()
        manager.close()
        #expect(summary.allSucceeded)
        #expect(try Data(contentsOf: folder.appendingPathComponent("a.bin")) == bytes)
        let single = folder.appendingPathComponent("single.bin")
        _ = try await Job<URL>.download(from: server.url("single"), to: single, durability: durability).value
        #expect(try Data(contentsOf: single) == bytes)
        return (folder, flushed(under: folder))
    }

    @Test func theDefaultFlushesNothing() async throws {
        #expect(DownloadManager.Configuration().durability == .process)
        let (_, flushed) = try await download(durability: .process)

        #expect(flushed.isEmpty, "\(flushed)")
    }

    @Test func systemDurabilityFlushesEachFileBeforeItsRenameItsFolderAndTheJournal() async throws {
        let (folder, flushed) = try await download(durability: .system)

        let path = folder.standardizedFileURL.path
        #expect(flushed.filter { $0 == path + "/a.bin.part" }.count == 1)
        #expect(flushed.filter { $0 == path + "/single.bin.part" }.count == 1)
        #expect(flushed.contains(path), "the folder, after a rename")
        #expect(flushed.contains(path + "/" + DownloadJournal.fileName), "the journal, before the rename")
    }
}
