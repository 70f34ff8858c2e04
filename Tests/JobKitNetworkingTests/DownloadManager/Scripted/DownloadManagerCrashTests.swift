import Foundation
import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// The real manager killed, or cut off by a power loss, on a file system in memory
/// (`MemoryFileSystem`), then a new manager opened on the same disk: what the docs promise of each
/// durability ("Durability: a killed process, or a power loss" and "After a crash").
@Suite struct DownloadManagerCrashTests {
    /// What the kernel had written back by itself when the power went (it does every few seconds).
    enum WriteBack: String, CaseIterable, Sendable {
        case nothing
        case files
        case folders
        case everything

        func apply(to disk: MemoryFileSystem) {
            switch self {
            case .nothing: break
            case .files: disk.writeBack(files: true, folders: false)
            case .folders: disk.writeBack(files: false, folders: true)
            case .everything: disk.writeBack()
            }
        }
    }

    /// A process killed after an item completed: the next manager has it completed, its file intact,
    /// and asks the server for nothing.
    @Test func aKillAfterCompletionKeepsTheFileAndFetchesNothingAgain() async throws {
        let world = MemoryDownloads(bytes: pattern(150_000))
        let first = try world.open()
        let id = try first.add(world.url)
        #expect(await first.waitUntilFinished().allSucceeded)
        world.disk.kill()
        first.abandonForTesting()

        let second = try world.open()
        defer { second.close() }
        #expect(second.item(id)?.state == .completed)
        #expect(try second.add(world.url) == id)
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(world.transport.requests.count == 1)
        #expect(world.names == [DownloadJournal.fileName, "big.bin"].sorted())
    }

    /// A process killed after it recorded a removal, before it unlinked the `.part` (the unlink
    /// failed): the next manager removes that `.part`, but only once the journal that says the item is
    /// gone is on the disk. Unlinked before, a power loss could keep the unlink and lose the record.
    @Test func aRestartUnlinksARemovedItemsPartOnlyOnceTheRemovalIsOnTheDisk() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000), dropAt: 10_000)
        let (first, id) = try await world.openSuspendedWithPart(durability: .system)
        world.disk.fail(.unlink, name: "big.bin.part", with: EIO)
        try first.remove(id)
        #expect(world.contents(of: "big.bin.part")?.count == 10_000)
        world.disk.kill()
        first.abandonForTesting()
        #expect(Self.syncedIDs(in: world) == [id.rawValue], "a removal's record is not synced by itself")

        let (second, seen) = try Self.openSeeingTheSyncedJournalAtTheUnlink(of: "big.bin.part", in: world)
        defer { second.close() }
        #expect(seen == [[]], "the journal on the disk says the item is gone")
        #expect(second.items.isEmpty)
        #expect(world.contents(of: "big.bin.part") == nil)
    }

    /// A close whose rewritten journal (with a removal the journal before did not have) was renamed
    /// into place but whose folder could not be flushed: the folder's entry on the disk still names
    /// the journal before the rewrite, which has the item. The next manager flushes the folder too
    /// before it unlinks the item's `.part`: a power loss then cannot bring the item back without it.
    @Test func aRestartFlushesTheFolderOfARewrittenJournalBeforeItsUnlinks() async throws {
        let world = MemoryDownloads(bytes: pattern(50_000), dropAt: 10_000)
        let (first, id) = try await world.openSuspendedWithPart(durability: .system)
        let journal = DownloadJournal.fileName
        // The removal's record cannot be written: its unlinks wait for the next write, the close's
        // rewrite (which keeps the removed item, its `.part` being still there).
        world.disk.fail(.write, name: journal, with: EIO)
        #expect(throws: DownloadManagerError.self) { try first.remove(id) }
        world.disk.fail(.folderSync, name: world.folder.path, with: EIO)
        first.close()
        #expect(world.contents(of: "big.bin.part")?.count == 10_000, "a close whose rewrite failed unlinks nothing")
        #expect(Self.syncedIDs(in: world) == [id.rawValue], "the rewrite's name is not on the disk")

        let (second, seen) = try Self.openSeeingTheSyncedJournalAtTheUnlink(of: "big.bin.part", in: world)
        defer { second.close() }
        #expect(seen == [[]], "the journal on the disk, under its name, says the item is gone")
        #expect(second.items.isEmpty)
        #expect(world.contents(of: "big.bin.part") == nil)
    }

    /// The ids of the items in the journal a power loss would leave: synced, under the name the
    /// folder's last flush gave it.
    static func syncedIDs(in world: MemoryDownloads) -> [UInt64]? {
        world.disk.durableContents(of: DownloadJournal.fileName, in: world.folder.path)
            .flatMap { try? DownloadJournal.parse($0) }?.entries.map(\.id)
    }

    /// Opens a manager with `.system` durability on `world`, and what `syncedIDs` said at each of its
    /// unlinks of `name` (during its recovery).
    static func openSeeingTheSyncedJournalAtTheUnlink(of name: String, in world: MemoryDownloads) throws
        -> (DownloadManager, [[UInt64]?])
    {
        let seen = LockedBox<[[UInt64]?]>.make([])
        let manager = try world.open(durability: .system) { names in
            guard names.contains(name) else { return }
            let ids = syncedIDs(in: world)
            seen.withLock { $0.append(ids) }
        }
        return (manager, seen.withLock { $0 })
    }

    /// A process killed mid-download: the next manager resumes the `.part` where it ends, with the
    /// validator, and the file is byte-exact.
    @Test func aKillMidDownloadResumesWhereThePartEnds() async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try await world.openDroppedOnce()
        world.disk.kill()
        first.abandonForTesting()

        let second = try world.open()
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let resumed = try #require(world.transport.requests.last)
        #expect(resumed.value(forHTTPHeaderField: "Range") == "bytes=100000-")
        #expect(world.transport.requests.count == 2)
    }

    /// A segmented download (two connections, positional writes into one `.part`, its map in the
    /// `.part.meta`) killed after one connection dropped: the next manager resumes each unfinished
    /// segment with `bytes=A-B` and the file is byte-exact.
    @Test func aKillMidSegmentedDownloadResumesEachSegment() async throws {
        let size = 4 << 20
        // Request 0 is the probe (segment 0), request 1 segment 1: it drops 1.5 MiB in.
        let world = MemoryDownloads(bytes: largePattern(size, seed: 3), dropAt: 3 << 19, dropping: 1)
        let first = try world.open(retries: true)
        try first.add(contentsOf: [DownloadManager.Request(url: world.url, connections: 2)])
        await world.scheduler.until("the split failed with its map kept and waits for its backoff") {
            $0.contains(.seconds(10))
        }
        world.disk.kill()
        first.abandonForTesting()

        // Connections are not kept in the journal: the restored item waits for its request again.
        let second = try world.open(startsRestored: false)
        defer { second.close() }
        try second.add(contentsOf: [DownloadManager.Request(url: world.url, connections: 2)])
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let resumed = world.transport.requests.dropFirst(2)
        #expect(!resumed.isEmpty)
        #expect(resumed.allSatisfy { $0.value(forHTTPHeaderField: "If-Range") == "\"v1\"" })
        #expect(resumed.allSatisfy { $0.value(forHTTPHeaderField: "Range")?.hasSuffix("-4194303") == true })
    }

    /// With the default durability (`.process`) a power loss after an item completed may lose the
    /// file, or leave it empty or short, and the journal's last records — but never makes a wrong
    /// file the item's: adding the download again, it is completed with the right bytes (kept, or
    /// fetched again), or it fails `fileInTheWay` leaving what is under the name as it is.
    @Test(arguments: [false, true], WriteBack.allCases)
    func aPowerLossAfterCompletionNeverLeavesAWrongFileAsTheItems(
        writtenBackAfterAdd: Bool, afterCompletion: WriteBack
    ) async throws {
        let world = MemoryDownloads(bytes: pattern(100_000))
        let first = try world.open()
        try first.add(world.url)
        // Right after `add`: the download has started, so anywhere from before its first byte to
        // after its last.
        if writtenBackAfterAdd { world.disk.writeBack() }
        #expect(await first.waitUntilFinished().allSucceeded)
        afterCompletion.apply(to: world.disk)
        world.disk.powerLoss()
        first.abandonForTesting()
        let left = world.contents(of: "big.bin")

        let second = try world.open()
        defer { second.close() }
        let id = try second.add(world.url)
        _ = await second.waitUntilFinished()
        let state = try #require(second.item(id)?.state)
        switch state {
        case .completed:
            #expect(world.contents(of: "big.bin") == world.bytes)
        case .failed(let failure):
            // What is under the name is not the manager's by its journal (even when its bytes are
            // right: the kernel wrote them back, not the record that they are the item's).
            #expect(failure.kind == .fileInTheWay)
            #expect(left != nil)
            #expect(world.contents(of: "big.bin") == left)
        default:
            Issue.record("the item ended \(state)")
        }
        if afterCompletion == .everything {
            #expect(state == .completed)
            #expect(world.transport.requests.count == 1)
        }
    }

    /// With `.system` durability a power loss right after an item completed — nothing written back
    /// by the kernel, the `done` record's background sync not yet run — keeps the file, complete,
    /// and the item completed: nothing is fetched again.
    @Test func aPowerLossAfterCompletionWithSystemDurabilityKeepsTheFile() async throws {
        let world = MemoryDownloads(bytes: pattern(120_000))
        let first = try world.open(durability: .system)
        let id = try first.add(world.url)
        #expect(await first.waitUntilFinished().allSucceeded)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: .system)
        defer { second.close() }
        #expect(second.item(id)?.state == .completed)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.transport.requests.count == 1)
    }

    /// A power loss mid-download, whatever the kernel had written back, then a new manager and the
    /// download added again: the file is byte-exact. The `.part` was never flushed (shorter than
    /// the flush interval), so even one the kernel wrote back whole starts over: after a restart of
    /// the machine nothing tells its bytes from holes.
    @Test(arguments: [Durability.process, .system], WriteBack.allCases)
    func aPowerLossMidDownloadThenResumingGivesTheExactFile(durability: Durability, midway: WriteBack) async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try await world.openDroppedOnce(durability: durability)
        midway.apply(to: world.disk)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: durability)
        defer { second.close() }
        try second.add(world.url)
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(!world.names.contains("big.bin.part"))
        #expect(world.transport.requests.last?.value(forHTTPHeaderField: "Range") == nil)
    }

    /// A power loss mid-download that keeps the `.part`'s later bytes but not its earlier ones (the
    /// kernel writes a file's dirty pages back in no promised order; the size goes with the later
    /// ones, the earlier read as zeros): the machine booted again since the `.part` was written, and
    /// a `.part` never flushed (a file shorter than the flush interval, or `.process` durability)
    /// starts over rather than being resumed over its holes. The file is byte-exact.
    @Test(arguments: [Durability.process, .system])
    func aPowerLossKeepingOnlyThePartsLaterBytesStartsOver(durability: Durability) async throws {
        let world = MemoryDownloads(bytes: pattern(400_000), dropAt: 300_000)
        let first = try await world.openDroppedOnce(durability: durability)
        let folder = world.folder.path
        world.disk.writeBack(files: false, folders: true)
        for name in [DownloadJournal.fileName, "big.bin.part.meta"] {
            world.disk.writeBack(0..<Int.max, of: name, in: folder)
        }
        world.disk.writeBack(200_000..<300_000, of: "big.bin.part", in: folder)
        #expect(world.metadata()?.synced == nil)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: durability)
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let last = try #require(world.transport.requests.last)
        #expect(last.value(forHTTPHeaderField: "Range") == nil)
        #expect(world.transport.requests.count == 2)
    }

    /// The same power loss with `.system` durability and a `.part` flushed every 64 KiB while it is
    /// written: the resume continues from the length flushed last (the `.part` cut to it), not from
    /// its end, and the file is byte-exact.
    @Test func aPowerLossWithSystemDurabilityResumesFromTheFlushedLength() async throws {
        let world = MemoryDownloads(bytes: pattern(400_000), dropAt: 300_000)
        let first = try await world.openDroppedOnce(durability: .system, syncInterval: 64 << 10)
        let folder = world.folder.path
        world.disk.writeBack(files: false, folders: true)
        for name in [DownloadJournal.fileName, "big.bin.part.meta"] {
            world.disk.writeBack(0..<Int.max, of: name, in: folder)
        }
        world.disk.writeBack(290_000..<300_000, of: "big.bin.part", in: folder)
        let metadata = try #require(world.metadata())
        // Flushed after each 64 KiB: the last flush at 4 × 64 KiB, before the drop at 300 000.
        #expect(metadata.synced == 262_144)
        #expect(metadata.boot == world.disk.bootIdentity)
        world.disk.powerLoss()
        first.abandonForTesting()
        #expect(world.contents(of: "big.bin.part")?.count == 300_000)

        let second = try world.open(durability: .system)
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let resumed = try #require(world.transport.requests.last)
        #expect(resumed.value(forHTTPHeaderField: "Range") == "bytes=262144-")
        #expect(resumed.value(forHTTPHeaderField: "If-Range") == "\"v1\"")
        #expect(world.transport.requests.count == 2)
    }

    /// What the flushes cost: with `.process` a `.part` is never flushed; with `.system` once per
    /// interval while it is written, and once more at its finalize — a file shorter than the
    /// interval only then.
    @Test(
        arguments: [(Durability.process, 64 << 10, 0), (.system, 64 << 10, 7), (.system, nil, 1)]
            as [(Durability, Int64?, Int)])
    func aPartIsFlushedOncePerIntervalOnlyWithSystemDurability(
        durability: Durability, interval: Int64?, flushes: Int
    ) async throws {
        let world = MemoryDownloads(bytes: pattern(400_000))
        let counting = 1_000
        world.disk.fail(.sync, name: "big.bin.part", with: EIO, skipping: counting)
        let manager = try world.open(durability: durability, syncInterval: interval)
        defer { manager.close() }
        try manager.add(world.url)
        #expect(await manager.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let left = try #require(world.disk.pendingFaults.first { $0.operation == .sync })
        // 400 000 bytes: flushed at 6 × 64 KiB, then at the finalize.
        #expect(counting - left.skipping == flushes)
    }

    /// A process killed mid-download with no restart of the machine: whatever was flushed, the
    /// next manager trusts the whole `.part` (the page cache keeps what a killed process wrote) and
    /// resumes where it ends.
    @Test(arguments: [Durability.process, .system])
    func aKillWithoutARestartResumesTheWholePart(durability: Durability) async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try await world.openDroppedOnce(durability: durability, syncInterval: 64 << 10)
        #expect(world.metadata()?.synced == (durability == .system ? 65_536 : nil))
        world.disk.kill()
        first.abandonForTesting()

        let second = try world.open(durability: durability)
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(world.transport.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=100000-")
    }

    /// A clean restart of the machine (everything written back) with `.process` durability: the
    /// `.part` was never flushed, so whether its bytes reached the disk cannot be told from it, and
    /// it starts over.
    @Test func aRestartWithProcessDurabilityStartsAnUnflushedPartOver() async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try await world.openDroppedOnce()
        world.disk.reboot()
        first.abandonForTesting()

        let second = try world.open()
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(world.transport.requests.last?.value(forHTTPHeaderField: "Range") == nil)
    }

    /// The metadata of an older JobKit (no boot, no flushed length) beside a `.part` left by a
    /// killed process: resumed from the `.part`'s end while the running boot can be told, as that
    /// JobKit did; started over when it cannot (a restart cannot be ruled out).
    @Test(arguments: [true, false])
    func olderMetadataResumesWhileTheBootCanBeTold(bootReadable: Bool) async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try await world.openDroppedOnce()
        world.disk.kill()
        first.abandonForTesting()
        let written = try #require(world.contents(of: "big.bin.part.meta"))
        var fields = try #require(try JSONSerialization.jsonObject(with: written) as? [String: Any])
        #expect(fields["boot"] as? String == world.disk.bootIdentity)
        for key in ["boot", "synced", "syncedSegments"] { fields[key] = nil }
        world.disk.put(
            try JSONSerialization.data(withJSONObject: fields), named: "big.bin.part.meta", in: world.folder.path)
        #expect(world.metadata()?.boot == nil)
        world.disk.bootIdentityReadable = bootReadable

        let second = try world.open()
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let range = world.transport.requests.last?.value(forHTTPHeaderField: "Range")
        #expect(range == (bootReadable ? "bytes=100000-" : nil))
    }

    /// A segmented download with `.system` durability, flushed every 1 MiB, cut by a power loss
    /// after one connection dropped: the map claims more than was flushed, and the next manager
    /// resumes each segment only from its flushed progress (`bytes=A-B` from there), byte-exact.
    @Test func aPowerLossMidSegmentedDownloadResumesOnlyTheFlushedProgress() async throws {
        let size = 4 << 20
        // Request 0 is the probe (segment 0), request 1 segment 1: it drops 1.5 MiB in.
        let world = MemoryDownloads(bytes: largePattern(size, seed: 5), dropAt: 3 << 19, dropping: 1)
        let first = try world.open(durability: .system, retries: true, syncInterval: 1 << 20)
        try first.add(contentsOf: [DownloadManager.Request(url: world.url, connections: 2)])
        await world.scheduler.until("the split failed with its map kept and waits for its backoff") {
            $0.contains(.seconds(10))
        }
        let metadata = try #require(world.metadata())
        let map = try #require(metadata.segments)
        let synced = try #require(metadata.syncedSegments)
        #expect(synced.doneBytes < map.doneBytes)
        let folder = world.folder.path
        world.disk.writeBack(files: false, folders: true)
        for name in [DownloadJournal.fileName, "big.bin.part.meta"] {
            world.disk.writeBack(0..<Int.max, of: name, in: folder)
        }
        // A later page of segment 1 reached the disk, the ones before it since the flush did not.
        world.disk.writeBack(3_600_000..<3_670_016, of: "big.bin.part", in: folder)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: .system, startsRestored: false)
        defer { second.close() }
        try second.add(contentsOf: [DownloadManager.Request(url: world.url, connections: 2)])
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        let resumed = world.transport.requests.dropFirst(2).compactMap { $0.value(forHTTPHeaderField: "Range") }
        let expected = synced.missing.map { "bytes=\($0.range.lowerBound)-\($0.range.upperBound - 1)" }
        #expect(!expected.isEmpty)
        #expect(resumed.sorted() == expected.sorted())
    }
}
