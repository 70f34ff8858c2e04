import Foundation

@testable import JobKitNetworking

/// The journal as it is on the disk, with the records the manager has queued and not written yet,
/// recovered (`JournalRecovery`, as a new manager would) to the items and statuses the live manager
/// holds. Checked after every step, so that a crash at any moment restores what the manager knew
/// (what it had not written yet is what a crash may legitimately lose).
///
/// Incrementally: the replay is a function of the journal (with what is queued), the live entries
/// and the facts of their files, so a step that changed none of them (most steps write a `.part`)
/// is not replayed again, for the cost of a comparison: of the journal's stamp
/// (`MemoryFileSystem.stamp`), not its bytes, which are read only when something changed — by the
/// simulation's `ParsedJournal`, which reads only what was appended since. It judges as
/// `JournalRecovery` does: the records parsed, each status against the disk (`JournalRecovery.status`).
struct JournalReplay {
    /// What the last replay that agreed was of.
    private struct Input: Equatable {
        var journal: MemoryDisk.Stamp?
        var waiting: Waiting?
        var entries: [DownloadJournal.Entry]
        var facts: [FileFacts]
    }

    /// The records the machine has not written yet (`JournalBuffer.Write`, compared).
    private enum Waiting: Equatable {
        case append([DownloadJournal.Record])
        case rewrite(DownloadJournal.Header, [DownloadJournal.Entry], removed: [DownloadJournal.Entry])

        init?(_ write: JournalBuffer.Write?) {
            switch write {
            case .append(let records)?: self = .append(records)
            case .rewrite(let header, let compacted)?:
                self = .rewrite(header, compacted.entries, removed: compacted.removed)
            case nil: return nil
            }
        }
    }

    private var agreed: Input?

    /// Nil when the journal on the disk (`stamp` tells which bytes it has; `journal` reads them), with
    /// the records `machine` has not handed out yet, replays to `machine`'s items, judged against the
    /// files `facts` tells of (`part` names an item's `.part`); else what differs. `parsed` reads a
    /// journal (the simulation's `ParsedJournal`, which reads only what was appended).
    mutating func mismatch<Handle>(
        _ machine: DownloadManagerStateMachine<Handle>, stamp: MemoryDisk.Stamp?, journal: () -> Data,
        part: (String) -> String, facts: ([String]) -> [FileFacts], parsed: (Data) -> DownloadJournal.Contents?
    ) -> String? {
        var probe = machine
        let known = machine.journalEntries
        let names = Self.namesAndParts(of: known, part: part)
        // Of a `.part`, the recovery reads only whether it is there (its length is not compared).
        var told = facts(names)
        for index in stride(from: 1, to: told.count, by: 2) where told[index] != .missing { told[index] = .directory }
        let input = Input(journal: stamp, waiting: Waiting(probe.takeJournal()), entries: known, facts: told)
        guard input != agreed else { return nil }
        probe = machine
        var journal = journal()
        // A torn end (a failed write whose lines could not be cut back off) is never appended to: the
        // manager's next write rewrites the journal whole (`JournalFile.isTorn`).
        if let last = journal.last, last != UInt8(ascii: "\n") { probe.journal.oweRewrite() }
        switch probe.takeJournal() {
        case .append(let records)?: journal.append(DownloadJournal.encode(records))
        case .rewrite(let header, let records)?: journal = DownloadJournal.encode(header: header, records)
        case nil: break
        }
        guard let entries = parsed(journal)?.entries else { return "the journal does not read back" }
        let read = Self.namesAndParts(of: entries, part: part)
        let judged = Dictionary(zip(read, facts(read))) { first, _ in first }
        if let mismatch = Self.mismatch(entries, known, facts: { judged[$0] ?? .missing }) { return mismatch }
        agreed = input
        return nil
    }

    /// Each entry's name, then its `.part`'s (`part` of it), in order.
    private static func namesAndParts(of entries: [DownloadJournal.Entry], part: (String) -> String) -> [String] {
        var names: [String] = []
        names.reserveCapacity(2 * entries.count)
        for entry in entries {
            names.append(entry.name)
            names.append(part(entry.name))
        }
        return names
    }

    private static func mismatch(
        _ entries: [DownloadJournal.Entry], _ known: [DownloadJournal.Entry], facts: (String) -> FileFacts
    ) -> String? {
        let read = entries.map { entry in
            var judged = entry
            judged.status = JournalRecovery.status(
                of: entry, file: facts(entry.name), part: facts(PartNames(for: entry.name).part))
            return judged
        }
        guard read.map(\.id) == known.map(\.id) else {
            return "the journal replays to other items: \(read.map(\.id)) vs \(known.map(\.id))"
        }
        for (replayed, entry) in zip(read, known) {
            guard replayed.name == entry.name, replayed.url == entry.url, replayed.checksum == entry.checksum else {
                return "the journal replays item \(entry.id) as \(replayed.name) from \(replayed.url)"
            }
            if !agree(replayed.status, entry.status, replaced: entry.replaced) {
                return "the journal replays item \(entry.id) as \(replayed.status), not \(entry.status)"
            }
        }
        return nil
    }

    /// Whether the recovered status says what the live one does: a `finishing` item is completed once
    /// its rename happened, pending before (or completed with the file it replaces, downloaded again);
    /// a completed file the user changed since is theirs.
    private static func agree(
        _ replayed: DownloadJournal.Entry.Status, _ live: DownloadJournal.Entry.Status,
        replaced: DownloadJournal.Entry.Replaced?
    ) -> Bool {
        switch (replayed, live) {
        // Or, downloaded again, the completed file it replaces before the rename.
        case (.completed(let size), .finishing(let expected)): size == expected || size == replaced?.size
        case (.pending, .finishing): true
        case (.failed(let failure), .completed): failure.kind == .fileInTheWay
        default: replayed == live
        }
    }
}
