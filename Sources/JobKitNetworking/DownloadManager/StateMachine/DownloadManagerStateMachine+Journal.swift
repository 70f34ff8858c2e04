import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Journal

    /// Takes the records waiting to be written (or, when the journal has grown past twice its
    /// compacted size, the whole journal to write anew); nil when none wait.
    mutating func takeJournal() -> JournalWrite? {
        let (items, removed) = (items, removedUncleaned)
        return journal.take { Self.compaction(of: items, removed: removed) }
    }

    /// A write taken by `takeJournal` failed (a full disk): its records go back to the front, to be
    /// written before any later one (a failed rewrite is owed again, whole).
    mutating func untake(_ write: JournalWrite) {
        journal.untake(write)
    }

    /// The journal that says everything the manager knows, in few records.
    mutating func compacted() -> JournalWrite {
        journal.rewrite(Self.compaction(of: items, removed: removedUncleaned))
    }

    /// The compacted journal of `items`, with the `removed` items whose name no item has again (in
    /// the order of their ids) kept before them.
    private static func compaction(of items: ItemTable<Handle>, removed: [String: DownloadJournal.Entry])
        -> (header: DownloadJournal.Header, records: DownloadJournal.Compacted)
    {
        let kept = removed.values.filter { items.id(named: $0.name) == nil }.sorted { $0.id < $1.id }
        return DownloadJournal.compacted(journalEntries(of: items), removed: kept, nextID: items.nextID)
    }

    /// The items as the journal describes them.
    var journalEntries: [DownloadJournal.Entry] { Self.journalEntries(of: items) }

    static func journalEntries(of items: ItemTable<Handle>) -> [DownloadJournal.Entry] {
        items.ids.compactMap { id in
            guard let entry = items[id] else { return nil }
            // Downloaded again: completed from its old URL until the new file takes the name.
            if let previous = entry.previous, !previous.announced {
                return DownloadJournal.Entry(
                    id: id.rawValue, url: previous.url, name: entry.name, checksum: entry.checksum,
                    status: .completed(size: previous.size), ownsFile: entry.ownsFile)
            }
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
            // Its new file about to take the name: the completed one it replaces stays until then.
            let replaced = entry.previous.flatMap { previous in
                status == .finishing(size: entry.finishingSize ?? -1)
                    ? DownloadJournal.Entry.Replaced(url: previous.url, size: previous.size) : nil
            }
            return DownloadJournal.Entry(
                id: id.rawValue, url: entry.url, name: entry.name, checksum: entry.checksum, status: status,
                ownsFile: entry.ownsFile, replaced: replaced)
        }
    }
}
