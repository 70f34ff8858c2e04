import Foundation

@testable import JobKitNetworking

/// The journal as it is on the disk, with the records the manager has queued and not written yet,
/// recovered (`JournalRecovery`, as a new manager would) to the items and statuses the live manager
/// holds. Checked after every step, so that a crash at any moment restores what the manager knew
/// (what it had not written yet is what a crash may legitimately lose).
///
/// Incrementally: the replay is a function of the journal (with what is queued), the live entries
/// and the facts of their files, so a step that changed none of them (most steps write a `.part`)
/// is not replayed again — the check still holds after every step, for the cost of a comparison.
struct JournalReplay {
    /// What the last replay that agreed was of.
    private struct Input: Equatable {
        var journal: Data
        var entries: [DownloadJournal.Entry]
        var facts: [FileFacts]
    }

    private var agreed: Input?

    /// Nil when the journal replays to `manager`'s items; else what differs.
    mutating func mismatch(_ manager: SimulatedManager, disk: SimulatedDisk) -> String? {
        guard !manager.isClosed else { return nil }
        var probe = manager.machine
        var journal = disk.journal
        switch probe.takeJournal() {
        case .append(let records)?: journal.append(DownloadJournal.encode(records))
        case .rewrite(let header, let records)?: journal = DownloadJournal.encode(header: header, records)
        case nil: break
        }
        let known = manager.machine.journalEntries
        // Of a `.part`, the recovery reads only whether it is there (its length is not compared).
        let facts = known.flatMap { entry in
            [disk.facts(entry.name), disk.facts(PartNames(for: entry.name).part) == .missing ? .missing : .directory]
        }
        let input = Input(journal: journal, entries: known, facts: facts)
        guard input != agreed else { return nil }
        if let mismatch = Self.mismatch(journal, known, disk: disk) { return mismatch }
        agreed = input
        return nil
    }

    private static func mismatch(_ journal: Data, _ known: [DownloadJournal.Entry], disk: SimulatedDisk) -> String? {
        let recovery: JournalRecovery
        do {
            recovery = try JournalRecovery(journal: journal, facts: disk.facts)
        } catch {
            return "the journal does not read back: \(error)"
        }
        let read = recovery.contents.entries
        guard read.map(\.id) == known.map(\.id) else {
            return "the journal replays to other items: \(read.map(\.id)) vs \(known.map(\.id))"
        }
        for (replayed, entry) in zip(read, known) {
            guard replayed.name == entry.name, replayed.url == entry.url, replayed.checksum == entry.checksum else {
                return "the journal replays item \(entry.id) as \(replayed.name) from \(replayed.url)"
            }
            if !agree(replayed.status, entry.status) {
                return "the journal replays item \(entry.id) as \(replayed.status), not \(entry.status)"
            }
        }
        return nil
    }

    /// Whether the recovered status says what the live one does: a `finishing` item is completed once
    /// its rename happened, pending before; a completed file the user changed since is theirs.
    private static func agree(_ replayed: DownloadJournal.Entry.Status, _ live: DownloadJournal.Entry.Status) -> Bool {
        switch (replayed, live) {
        case (.completed(let size), .finishing(let expected)): size == expected
        case (.pending, .finishing): true
        case (.failed(let failure), .completed): failure.kind == .fileInTheWay
        default: replayed == live
        }
    }
}
