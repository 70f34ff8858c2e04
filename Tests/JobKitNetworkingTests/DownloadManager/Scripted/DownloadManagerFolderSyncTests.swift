import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// With `.system` durability, a name the folder's flush did not make durable is not trusted: the
/// finalize's rename and the journal's rewrite each fail when the flush after them fails.
@Suite struct DownloadManagerFolderSyncTests {
    @Test func aFailedFlushAfterTheRenameFailsTheDownloadAndAResumeFinishesIt() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000))
        // The first flush of the folder is the open's (its journal rewritten); the second follows
        // the finalize's rename.
        world.disk.fail(.folderSync, name: world.folder.path, with: EIO, skipping: 1)
        let manager = try world.open(durability: .system)
        defer { manager.close() }
        let id = try manager.add(world.url)

        let failed = await manager.waitUntilFinished()
        let failure = try #require(failed.failed.first?.state.failure)
        #expect(failure.message.contains(SystemCall.errorText(EIO)))
        #expect(world.contents(of: "big.bin") == nil, "a name a power loss could take back is not the file's")
        #expect(world.contents(of: "big.bin.part") == world.bytes, "the complete .part has its own name back")

        try manager.resume(id)
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(!world.names.contains("big.bin.part"))
        // A power loss now keeps the file: its name was flushed.
        world.disk.powerLoss()
        #expect(world.contents(of: "big.bin") == world.bytes)
    }

    @Test func aFailedFlushAfterTheJournalsRewriteRefusesTheOpenAndAnOpenAfterUsesIt() throws {
        let world = MemoryDownloads(bytes: pattern(1_000))
        let first = try world.open(durability: .system)
        let id = try first.add(world.url)
        first.close()

        world.disk.fail(.folderSync, name: world.folder.path, with: EIO)
        #expect {
            _ = try world.open(durability: .system)
        } throws: { error in
            guard case .cannotUseDirectory(_, let reason) = error as? DownloadManagerError else { return false }
            return reason.contains("cannot sync the folder")
        }
        // The rewrite is the journal (the same item); an open whose flush works uses it.
        let journal = try DownloadJournal.parse(try #require(world.contents(of: DownloadJournal.fileName)))
        #expect(journal.entries.map(\.url) == [world.url])
        let second = try world.open(durability: .system)
        defer { second.close() }
        #expect(second.items.map(\.id) == [id])
        #expect(second.items.map(\.url) == [world.url])
    }

    /// A removal whose record the disk refused owes its unlinks; the close's rewrite then says the
    /// item is gone, but its flush fails, so the unlinks stay undone. The rewritten journal still
    /// names the removed item (added, then removed): the next manager removes its `.part`, which
    /// nothing would name otherwise.
    @Test func aRemovedItemsPartIsCleanedByTheNextManagerAfterACloseWhoseFlushFailed() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000), dropAt: 10_000)
        let (manager, id) = try await world.openSuspendedWithPart(durability: .system)
        #expect(manager.items.map(\.state) == [.suspended])
        #expect(world.contents(of: "big.bin.part")?.count == 10_000)

        world.disk.fail(.write, name: DownloadJournal.fileName, with: ENOSPC)
        #expect(throws: DownloadManagerError.self) { try manager.remove(id) }
        #expect(world.contents(of: "big.bin.part") != nil, "the unlink waits for the record")
        world.disk.fail(.folderSync, name: world.folder.path, with: EIO)
        manager.close()
        #expect(world.contents(of: "big.bin.part") != nil, "nor is it done after a rewrite not flushed")
        let journal = try DownloadJournal.parse(try #require(world.contents(of: DownloadJournal.fileName)))
        #expect(journal.entries.isEmpty)
        #expect(journal.leftovers == ["big.bin"])

        let next = try world.open(durability: .system)
        defer { next.close() }
        #expect(next.items.isEmpty)
        #expect(world.names.filter { $0.hasPrefix("big.bin") }.isEmpty)
    }
}
