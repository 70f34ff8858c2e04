import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real manager on a file system in memory (`MemoryFileSystem`), a scripted transport and a
/// test scheduler: what the disk does — a file appearing, a full disk, a journal that cannot be
/// written — happens at the exact moment a test says.
@Suite struct DownloadManagerFileSystemTests {
    /// A file that appears under the name just before the `.part` takes it is never replaced: the
    /// item fails `fileInTheWay`, the file is left as it is and the complete `.part` stays beside it.
    @Test func aFileAppearingBeforeTheRenameIsNeverReplaced() async throws {
        let world = MemoryDownloads(bytes: pattern(100_000))
        let theirs = Data("somebody else's".utf8)
        world.disk.plant(.file(theirs), named: "big.bin", before: .rename, of: "big.bin.part")
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)

        let summary = await manager.waitUntilFinished()
        let failure = try #require(summary.failed.first?.state.failure)
        #expect(failure.kind == .fileInTheWay)
        #expect(manager.item(id)?.state.failure?.kind == .fileInTheWay)
        #expect(world.contents(of: "big.bin") == theirs)
        #expect(world.contents(of: "big.bin.part") == world.bytes)
        #expect(world.disk.pendingFaults.isEmpty)
    }

    /// So is a folder that appears there: the item fails `fileInTheWay` (as the docs say of a file
    /// or folder appearing while the item runs), the folder stays and so does the `.part`.
    @Test func aFolderAppearingBeforeTheRenameFailsTheItemFileInTheWay() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000))
        world.disk.plant(.directory, named: "big.bin", before: .rename, of: "big.bin.part")
        let manager = try world.open()
        defer { manager.close() }
        try manager.add(world.url)

        let summary = await manager.waitUntilFinished()
        #expect(summary.failed.first?.state.failure?.kind == .fileInTheWay)
        #expect(world.disk.names(in: world.folder.appendingPathComponent("big.bin").path).isEmpty)
        #expect(world.contents(of: "big.bin") == nil)
        #expect(world.contents(of: "big.bin.part") == world.bytes)
    }

    /// A folder that appears under the name while the body arrives (before the finalize looks)
    /// fails the item `fileInTheWay` too, the folder and the complete `.part` left as they are.
    @Test func aFolderAppearingWhileTheBodyArrivesFailsTheItemFileInTheWay() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000))
        world.disk.plant(.directory, named: "big.bin", before: .write, of: "big.bin.part", skipping: 2)
        let manager = try world.open()
        defer { manager.close() }
        try manager.add(world.url)

        let summary = await manager.waitUntilFinished()
        #expect(summary.failed.first?.state.failure?.kind == .fileInTheWay)
        #expect(world.disk.names(in: world.folder.appendingPathComponent("big.bin").path).isEmpty)
        #expect(world.contents(of: "big.bin.part") == world.bytes)
    }

    /// A full disk mid-write fails the item (a `file` failure naming the disk's words), keeping every
    /// byte written before; resumed, it goes on from there and the file is byte-exact.
    @Test func aFullDiskMidWriteKeepsWhatWasWrittenAndResumesFromThere() async throws {
        let world = MemoryDownloads(bytes: pattern(200_000))
        // The transport hands over 16 KiB pieces: three land, the fourth finds the disk full after
        // half of it (`write(2)` takes what fits; the next call fails).
        world.disk.fail(.write, name: "big.bin.part", with: ENOSPC, skipping: 3)
        let kept = 3 * 16_384 + 8_192
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)

        let failed = await manager.waitUntilFinished()
        let failure = try #require(failed.failed.first?.state.failure)
        #expect(failure.kind == .file)
        #expect(failure.message.contains("big.bin.part"))
        #expect(failure.message.contains(SystemCall.errorText(ENOSPC)))
        #expect(world.contents(of: "big.bin.part") == world.bytes.prefix(kept))
        #expect(world.contents(of: "big.bin") == nil)

        try manager.resume(id)
        let summary = await manager.waitUntilFinished()
        #expect(summary.allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let second = try #require(world.transport.requests.last)
        #expect(second.value(forHTTPHeaderField: "Range") == "bytes=\(kept)-", "every byte on the disk is kept")
        #expect(world.transport.requests.count == 2)
        #expect(!world.names.contains("big.bin.part"))
    }

    /// A journal write that fails (EIO) unlinks nothing: `cancel` throws `cannotUseDirectory` and the
    /// `.part` stays; once a later write succeeds (the manager tries again after a second), the
    /// unlink it owed is done.
    /// A metadata write that fails (a full disk) takes its `.tmp` with it: the item's removal, which
    /// unlinks its `.part` and metadata, then leaves nothing, and no later manager has to name it
    /// (found by a review: the `.tmp` stayed for good).
    @Test func aFailedMetadataWriteLeavesNoTemporaryForARemovalToMiss() async throws {
        let world = MemoryDownloads(bytes: pattern(100_000))
        // The response's metadata write goes; the next one (after 1,024 bytes, with `.system`) fails.
        world.disk.fail(.write, name: "big.bin.part.meta.tmp", with: ENOSPC, skipping: 1)
        let manager = try world.open(durability: .system, syncInterval: 1024)
        let id = try manager.add(world.url)
        _ = await manager.waitUntilFinished()
        #expect(world.disk.pendingFaults.isEmpty, "the failing write happened")
        #expect(!world.names.contains("big.bin.part.meta.tmp"))
        try manager.remove(id)
        _ = await manager.waitUntilFinished()
        manager.close()
        let next = try world.open(durability: .system)
        _ = await next.waitUntilFinished()
        next.close()
        #expect(world.names.sorted() == [DownloadJournal.fileName], "nothing of the removed item is left")
    }

    @Test func aFailedJournalWriteMakesCancelThrowAndUnlinkNothingUntilItIsWritten() async throws {
        let world = MemoryDownloads(bytes: pattern(100_000), dropAt: 40_000)
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)
        _ = await manager.waitUntilFinished()
        #expect(manager.item(id)?.state.failure?.kind == .network)
        #expect(world.contents(of: "big.bin.part")?.count == 40_000)

        world.disk.fail(.write, name: DownloadJournal.fileName, with: EIO)
        #expect {
            try manager.cancel(id)
        } throws: { error in
            guard case .cannotUseDirectory(_, let reason) = error as? DownloadManagerError else { return false }
            return reason.contains(SystemCall.errorText(EIO))
        }
        #expect(manager.item(id)?.state == .cancelled)
        #expect(world.names.contains("big.bin.part"))
        #expect(world.names.contains("big.bin.part.meta"))

        // The retry was scheduled before `cancel` threw.
        #expect(world.scheduler.scheduledDelays.contains(.seconds(1)))
        world.scheduler.advance(by: .seconds(1))
        // The retry runs on the manager's queue: each unlink is an operation on the disk.
        let folder = world.folder.path
        await world.disk.until("the owed unlinks are done once the record is written") { disk in
            let names = disk.names(in: folder)
            return !names.contains("big.bin.part") && !names.contains("big.bin.part.meta")
        }
    }

    /// `remove(deletingFile:)` of a completed item while the journal cannot be written throws, and
    /// the file stays until the record is written: a crash meanwhile finds the item with its file.
    @Test func aFailedJournalWriteMakesRemoveThrowAndKeepTheFileUntilItIsWritten() async throws {
        let world = MemoryDownloads(bytes: pattern(30_000))
        let manager = try world.open()
        defer { manager.close() }
        let id = try manager.add(world.url)
        #expect(await manager.waitUntilFinished().allSucceeded)
        // The fault is for the removal's record: not before the completion's own is written.
        let folder = world.folder.path
        await world.disk.until("the completion is in the journal") { disk in
            disk.contents(of: DownloadJournal.fileName, in: folder).map {
                String(decoding: $0, as: UTF8.self).contains(#""op":"done""#)
            } ?? false
        }

        world.disk.fail(.write, name: DownloadJournal.fileName, with: EIO)
        #expect(throws: DownloadManagerError.self) { try manager.remove(id, deletingFile: true) }
        #expect(manager.item(id) == nil)
        #expect(world.contents(of: "big.bin") == world.bytes)

        // The process dies before the record is written: the next manager has the item and its file.
        world.disk.kill()
        manager.abandonForTesting()
        let next = try world.open()
        defer { next.close() }
        #expect(next.items.map(\.state) == [.completed])
        #expect(world.contents(of: "big.bin") == world.bytes)
    }
    /// With `.system` durability an `add` whose journal sync fails throws and leaves no record a
    /// restart would honour (the lines are cut back off): nothing is added, now or after a crash.
    @Test func anAddWhoseJournalSyncFailsAddsNothingEvenAfterACrash() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        let manager = try world.open(durability: .system)
        world.disk.fail(.sync, name: DownloadJournal.fileName, with: EIO)
        #expect(throws: DownloadManagerError.self) { try manager.add(world.url) }
        #expect(manager.items.isEmpty)
        #expect(world.transport.requests.isEmpty)

        world.disk.kill()
        manager.abandonForTesting()
        let next = try world.open(durability: .system)
        defer { next.close() }
        #expect(next.items.isEmpty)
        #expect(world.transport.requests.isEmpty)
    }

    /// When the sync of an `add`'s lines fails and cutting them back off fails too, the journal is
    /// written whole without them at once: no restart restores what the call refused, and a later
    /// `add` is not appended after lines whose ids it would reuse. Found by the simulation of the
    /// real manager (the journal replayed to items 1 and 2, the manager had none).
    @Test func anAddWhoseLinesCannotBeCutBackRewritesTheJournalWithoutThem() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        let manager = try world.open(durability: .system)
        world.disk.fail(.sync, name: DownloadJournal.fileName, with: EIO)
        world.disk.fail(.truncate, name: DownloadJournal.fileName, with: EIO)
        #expect(throws: DownloadManagerError.self) { try manager.add(world.url) }
        #expect(manager.items.isEmpty)
        let journal = try #require(world.contents(of: DownloadJournal.fileName))
        #expect(try DownloadJournal.parse(journal).entries.isEmpty)

        let other = try manager.add(URL(string: "http://scripted.test/other.bin")!)
        world.disk.kill()
        manager.abandonForTesting()
        let next = try world.open(durability: .system)
        defer { next.close() }
        #expect(next.items.map(\.id) == [other])
        #expect(next.items.map(\.name) == ["other.bin"])
        #expect(next.journalProblems.isEmpty)
    }

    /// When that rewrite fails too (the disk still failing), it is tried again a second later, with
    /// no other call of the user's: an idle app killed after the disk recovered restores nothing the
    /// refused `add` had written.
    @Test func aTornJournalWhoseRewriteFailsIsRewrittenByTheRetry() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        let manager = try world.open(durability: .system)
        defer { manager.close() }
        world.disk.fail(.sync, name: DownloadJournal.fileName, with: EIO)
        world.disk.fail(.truncate, name: DownloadJournal.fileName, with: EIO)
        world.disk.fail(.open, name: DownloadJournal.fileName + ".tmp", with: ENOSPC)
        #expect(throws: DownloadManagerError.self) { try manager.add(world.url) }
        let journal = try #require(world.contents(of: DownloadJournal.fileName))
        #expect(try DownloadJournal.parse(journal).entries.count == 1, "the refused line is still there")

        world.scheduler.advance(by: DownloadManager.journalRetryDelay)
        let folder = world.folder.path
        await world.disk.until("the retry rewrote the journal without the refused line") { disk in
            disk.contents(of: DownloadJournal.fileName, in: folder).map {
                (try? DownloadJournal.parse($0).entries.isEmpty) == true
            } ?? false
        }
    }

    /// With `.system` durability a journal sync that fails just before a complete `.part` would take its
    /// name stops the rename: the item fails keeping its `.part` (a power loss could otherwise keep the
    /// renamed file and lose the `finishing` record, and the item would find its own file in the way),
    /// and a resume completes it. Found by the simulation of the real manager.
    @Test func aJournalSyncThatFailsBeforeTheRenameStopsIt() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        let manager = try world.open(durability: .system)
        defer { manager.close() }
        // The add's own sync passes; the one before the rename fails.
        world.disk.fail(.sync, name: DownloadJournal.fileName, with: EIO, skipping: 1)
        let id = try manager.add(world.url)
        let failed = await manager.waitUntilFinished()
        #expect(failed.failed.map(\.id) == [id])
        #expect(world.contents(of: "big.bin") == nil)
        #expect(world.contents(of: "big.bin.part") == world.bytes)

        try manager.resume(id)
        let summary = await manager.waitUntilFinished()
        #expect(summary.completed.map(\.id) == [id])
        #expect(world.contents(of: "big.bin") == world.bytes)
    }

    /// A `.part` that cannot be created (EACCES) fails the item with a `file` failure naming it and
    /// the system's words, before any request.
    @Test func aPartThatCannotBeCreatedFailsTheItemBeforeAnyRequest() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        world.disk.fail(.open, name: "big.bin.part", with: EACCES)
        let manager = try world.open()
        defer { manager.close() }
        try manager.add(world.url)

        let failure = try #require(await manager.waitUntilFinished().failed.first?.state.failure)
        #expect(failure.kind == .file)
        #expect(failure.message.contains("big.bin.part: \(SystemCall.errorText(EACCES))"))
        #expect(world.transport.requests.isEmpty)
        #expect(!world.names.contains("big.bin.part"))
    }

    /// A journal that cannot be rewritten when the manager opens (its compaction's rename fails)
    /// fails the opening with `cannotUseDirectory`, leaves the journal as it was and releases the
    /// directory: the next manager opens it with its items.
    @Test func aJournalThatCannotBeRewrittenOnOpeningFailsItAndKeepsTheJournal() async throws {
        let world = MemoryDownloads(bytes: pattern(10_000))
        let first = try world.open()
        let id = try first.add(world.url)
        #expect(await first.waitUntilFinished().allSucceeded)
        first.close()
        let journal = world.contents(of: DownloadJournal.fileName)

        world.disk.fail(.rename, name: DownloadJournal.fileName + ".tmp", with: EIO)
        #expect {
            try world.open()
        } throws: { error in
            guard case .cannotUseDirectory(_, let reason) = error as? DownloadManagerError else { return false }
            return reason.contains(SystemCall.errorText(EIO))
        }
        #expect(world.contents(of: DownloadJournal.fileName) == journal)
        #expect(!world.names.contains(DownloadJournal.fileName + ".tmp"))
        let next = try world.open()
        defer { next.close() }
        #expect(next.item(id)?.state == .completed)
    }
}
