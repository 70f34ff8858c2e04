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

    /// A process killed mid-download: the next manager resumes the `.part` where it ends, with the
    /// validator, and the file is byte-exact.
    @Test func aKillMidDownloadResumesWhereThePartEnds() async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try world.open(retries: true)
        try first.add(world.url)
        await eventually("the first attempt dropped and waits for its backoff") {
            world.scheduler.scheduledDelays.contains(.seconds(10))
        }
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
        await eventually("the split failed with its map kept and waits for its backoff") {
            world.scheduler.scheduledDelays.contains(.seconds(10))
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
    /// download added again: the file is byte-exact (a `.part` that survived with its metadata
    /// resumes with the validator; anything less starts over).
    @Test(arguments: [Durability.process, .system], WriteBack.allCases)
    func aPowerLossMidDownloadThenResumingGivesTheExactFile(durability: Durability, midway: WriteBack) async throws {
        let world = MemoryDownloads(bytes: pattern(200_000), dropAt: 100_000)
        let first = try world.open(durability: durability, retries: true)
        try first.add(world.url)
        await eventually("the first attempt dropped and waits for its backoff") {
            world.scheduler.scheduledDelays.contains(.seconds(10))
        }
        midway.apply(to: world.disk)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: durability)
        defer { second.close() }
        try second.add(world.url)
        #expect(await second.waitUntilFinished().allSucceeded)
        #expect(world.contents(of: "big.bin") == world.bytes)
        #expect(!world.names.contains("big.bin.part"))
        if midway == .everything {
            #expect(world.transport.requests.last?.value(forHTTPHeaderField: "Range") == "bytes=100000-")
        }
    }
    /// A power loss mid-download that keeps the `.part`'s later bytes but not its earlier ones (the
    /// kernel writes a file's dirty pages back in no promised order; the size goes with the later
    /// ones, the earlier read as zeros) is resumed from the `.part`'s end: the zeros end up in the
    /// file, which completes. Nothing syncs a `.part` before it is complete, with either durability,
    /// and its length is all a resume checks — a known gap (see the report of issue 22's seam).
    @Test(arguments: [Durability.process, .system])
    func aPowerLossKeepingOnlyThePartsLaterBytesIsResumedOverItsHoles(durability: Durability) async throws {
        let world = MemoryDownloads(bytes: pattern(400_000), dropAt: 300_000)
        let first = try world.open(durability: durability, retries: true)
        try first.add(world.url)
        await eventually("the first attempt dropped and waits for its backoff") {
            world.scheduler.scheduledDelays.contains(.seconds(10))
        }
        let folder = world.folder.path
        world.disk.writeBack(files: false, folders: true)
        for name in [DownloadJournal.fileName, "big.bin.part.meta"] {
            world.disk.writeBack(0..<Int.max, of: name, in: folder)
        }
        world.disk.writeBack(200_000..<300_000, of: "big.bin.part", in: folder)
        world.disk.powerLoss()
        first.abandonForTesting()

        let second = try world.open(durability: durability)
        defer { second.close() }
        #expect(await second.waitUntilFinished().allSucceeded)
        withKnownIssue("a .part's holes after a power loss are resumed over") {
            #expect(world.contents(of: "big.bin") == world.bytes)
        }
    }
}
