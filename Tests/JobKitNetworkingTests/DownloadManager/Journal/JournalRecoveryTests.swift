import Foundation
import Testing

@testable import JobKitNetworking

/// What a new manager decides from a journal and the files beside it, without a disk.
@Suite struct JournalRecoveryTests {
    typealias Entry = DownloadJournal.Entry

    @Test func restoringJudgesEachEntryByTheDisk() {
        let done = DownloadJournalTests.entries[0]
        #expect(JournalRecovery.status(of: done, file: .file(size: 42), part: .missing) == .completed(size: 42))
        #expect(
            JournalRecovery.status(of: done, file: .missing, part: .missing) == .pending, "gone: fetched again")
        #expect(JournalRecovery.status(of: done, file: .directory, part: .missing) == .pending)
        let changed = JournalRecovery.status(of: done, file: .file(size: 7), part: .missing)
        guard case .failed(let failure) = changed else {
            Issue.record("a changed file is left alone: \(changed)")
            return
        }
        #expect(failure.kind == .fileInTheWay)
        #expect(
            failure.message
                == "done.bin has 7 bytes, not the 42 it had when downloaded: it changed, and is left as it is")

        var finishing = DownloadJournalTests.entries[1]
        finishing.status = .finishing(size: 10)
        #expect(
            JournalRecovery.status(of: finishing, file: .file(size: 10), part: .missing) == .completed(size: 10),
            "killed after the rename")
        #expect(JournalRecovery.status(of: finishing, file: .missing, part: .file(size: 10)) == .pending, "before it")
        #expect(
            JournalRecovery.status(of: finishing, file: .file(size: 10), part: .file(size: 10)) == .pending,
            "the complete .part is still there: the file under the name is somebody else's")
        #expect(
            JournalRecovery.status(of: finishing, file: .file(size: 10), part: .file(size: 3)) == .pending,
            "a .part the power cut short: the file of that size under the name may be somebody else's")
        #expect(
            JournalRecovery.status(of: DownloadJournalTests.entries[2], file: .missing, part: .file(size: 4))
                == .suspended)
    }

    @Test func itRestoresWhatTheJournalSaysAndTheDiskConfirms() throws {
        var files: [String: FileFacts] = [
            "done.bin": .file(size: 42), "part.bin.part": .file(size: 7), "held.bin.part": .file(size: 3),
        ]
        let recovery = try JournalRecovery(journal: DownloadJournalTests.journal()) { files[$0] ?? .missing }
        #expect(recovery.contents.entries.map(\.status) == DownloadJournalTests.entries.map(\.status))
        #expect(recovery.partLengths == [2: 7, 3: 3])
        // Every item's half-written metadata goes; the metadata of a `.part` that is gone too.
        #expect(recovery.unlinks.contains("done.bin.part.meta.tmp") && recovery.unlinks.contains("done.bin.part.meta"))
        #expect(recovery.unlinks.contains("part.bin.part.meta.tmp") && !recovery.unlinks.contains("part.bin.part.meta"))
        let names = Set(DownloadJournalTests.entries.map(\.name))
        #expect(!recovery.unlinks.contains { names.contains($0) }, "never an item's file")
        #expect(recovery.unlinks.contains("c.part"), "a cancelled item's .part is nobody's")

        // The rewritten journal replays to the same state, and recovering again decides the same.
        files["done.bin"] = .file(size: 42)
        let again = try JournalRecovery(journal: recovery.journal) { files[$0] ?? .missing }
        #expect(again.contents.entries == recovery.contents.entries)
        #expect(again.contents.nextID == recovery.contents.nextID && again.journal == recovery.journal)
    }

    @Test func aChangedCompletedFileIsNoLongerTheManagers() throws {
        let recovery = try JournalRecovery(journal: DownloadJournalTests.journal()) {
            $0 == "done.bin" ? .file(size: 41) : .missing
        }
        let done = try #require(recovery.contents.entries.first)
        guard case .failed = done.status else {
            Issue.record("\(done.status)")
            return
        }
        #expect(!done.ownsFile, "a file that changed is somebody else's: never replaced")
    }

    @Test func theLeftoversOfRemovedItemsAreUnlinkedAndNothingElse() throws {
        let removed = DownloadJournal.encode(
            header: DownloadJournal.Header(format: DownloadJournal.formatName, version: 1, next: 3),
            [
                .add(1, url: URL(string: "https://a.example/gone.bin")!, name: "gone.bin", checksum: nil),
                .init(op: .remove, id: 1),
            ])
        let recovery = try JournalRecovery(journal: removed) { _ in .file(size: 1) }
        #expect(recovery.contents.entries.isEmpty)
        #expect(recovery.unlinks == PartNames(for: "gone.bin").all)
    }

    @Test func anItemThatFailedItsChecksumResumesNoPart() throws {
        // Killed between the failure's record and the `.part`'s unlink, or a later start lost with
        // the power: either way the `.part` is not resumed, and only the item's own files go.
        let failed = Entry(
            id: 1, url: URL(string: "https://a.example/sum.bin")!, name: "sum.bin",
            checksum: try Checksum(sha256: String(repeating: "0f", count: 32)),
            status: .failed(.init(kind: .checksumMismatch, message: "checksum mismatch for sum.bin")))
        let recovery = try JournalRecovery(journal: DownloadJournalTests.journal([failed])) {
            $0 == "sum.bin.part" ? .file(size: 9) : .missing
        }
        #expect(recovery.contents.entries.map(\.status) == [failed.status], "it stays failed")
        #expect(recovery.partLengths.isEmpty)
        #expect(recovery.unlinks == PartNames(for: "sum.bin").all)
    }

    @Test func aFileThatIsNotAJournalIsRefusedAndNothingIsDecided() {
        #expect(throws: DownloadJournal.ReadError.notAJournal) {
            _ = try JournalRecovery(journal: Data("#!/bin/sh\nrm -rf /\n".utf8)) { _ in .missing }
        }
    }
}
