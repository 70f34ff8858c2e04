import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Journal

    /// What the journal must get: new records to append, or (when it has grown past twice its
    /// compacted size) the whole journal to write anew.
    enum JournalWrite {
        case append([DownloadJournal.Record])
        case rewrite(DownloadJournal.Header, [DownloadJournal.Record])
    }

    /// Takes the records waiting to be written; nil when none wait.
    mutating func takeJournal() -> JournalWrite? {
        if compactionOwed { return compacted() }
        guard !journal.isEmpty else { return nil }
        defer { journal = [] }
        if recordsSinceCompaction > max(1024, compactedRecords) {
            return compacted()
        }
        return .append(journal)
    }

    /// A write taken by `takeJournal` failed (a full disk): its records go back to the front, to be
    /// written before any later one (a failed rewrite is owed again, whole).
    mutating func untake(_ write: JournalWrite) {
        switch write {
        case .append(let records): journal = records + journal
        case .rewrite: compactionOwed = true
        }
    }

    /// The journal that says everything the manager knows, in few records.
    mutating func compacted() -> JournalWrite {
        journal = []
        compactionOwed = false
        let (header, records) = DownloadJournal.compacted(journalEntries, nextID: nextID)
        recordsSinceCompaction = 0
        compactedRecords = records.count
        return .rewrite(header, records)
    }

    /// The items as the journal describes them.
    var journalEntries: [DownloadJournal.Entry] {
        order.compactMap { id in
            guard let entry = entries[id] else { return nil }
            let status: DownloadJournal.Entry.Status
            switch entry.phase {
            case .pending, .running, .held:
                // A run that recorded `finishing` may have renamed its `.part` already: a compacted
                // journal keeps that, so that the next manager finds the file done (not fetched again).
                status = entry.finishingSize.map { .finishing(size: $0) } ?? .pending
            case .suspended: status = .suspended
            case .cancelled: status = .cancelled
            case .failed(let failure): status = .failed(failure)
            case .completed(let size): status = .completed(size: size)
            }
            return DownloadJournal.Entry(
                id: id.rawValue, url: entry.url, name: entry.name, checksum: entry.checksum, status: status,
                ownsFile: entry.ownsFile)
        }
    }

    mutating func record(_ record: DownloadJournal.Record) {
        journal.append(record)
        recordsSinceCompaction += 1
    }
}
