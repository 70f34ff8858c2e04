import Foundation

/// What a new manager decides from its folder's journal and the files beside it, before anything
/// runs: the items to restore with their statuses, the bytes already in their `.part`s, the leftovers
/// to unlink, and the journal to write back in their place.
///
/// Pure: it reads the folder only through `facts` and touches nothing; the manager carries out the
/// unlinks and the rewrite. The journal is one of three parts: its format (`DownloadJournal`:
/// records, parse, encode, compaction), its file (`JournalFile`: descriptor, lock, append, replace,
/// sync) and this recovery.
struct JournalRecovery: Equatable {
    /// The journal's items, their statuses judged against the disk.
    private(set) var contents: DownloadJournal.Contents
    /// The bytes in each item's `.part`, by item id.
    private(set) var partLengths: [UInt64: Int64] = [:]
    /// Names in the folder to unlink, in order: what a process killed mid-step left that nothing reads.
    private(set) var unlinks: [String] = []
    /// The journal to write back: the items compacted, torn lines gone.
    let journal: Data

    /// Judges the journal `data` against the folder, where `facts(name)` tells what is under `name`.
    /// - Throws: `.notAJournal`, `.unsupportedVersion` (the file is left as it is).
    init(journal data: Data, facts: (String) -> FileFacts) throws(DownloadJournal.ReadError) {
        self.init(contents: try DownloadJournal.parse(data), facts: facts)
    }

    /// Judges the journal read as `contents` against the folder, where `facts(name)` tells what is
    /// under `name`.
    init(contents read: DownloadJournal.Contents, facts: (String) -> FileFacts) {
        contents = read
        for index in contents.entries.indices {
            let entry = contents.entries[index]
            let parts = PartNames(for: entry.name)
            let part = facts(parts.part)
            let status = Self.status(of: entry, file: facts(entry.name), part: part)
            contents.entries[index].status = status
            // The completed file a download again did not replace: its URL again (its `.part` goes).
            if let replaced = entry.replaced, status == .completed(size: replaced.size), status != entry.status {
                contents.entries[index].url = replaced.url
            }
            contents.entries[index].replaced = nil
            // A completed file that changed since is somebody else's now: never replaced.
            if case .completed = entry.status, case .failed = status { contents.entries[index].ownsFile = false }
            // An item that failed its checksum never resumes a `.part`: it is the one that failed
            // (killed between the failure's record and its unlink), or one whose later start the
            // journal lost with the power; the next start downloads the whole file again.
            if case .failed(let failure) = status, failure.kind == .checksumMismatch {
                unlinks += parts.all
                continue
            }
            // A completed item resumes no `.part`: one beside it is what a download of it again
            // (`downloadAgain`) left when the process stopped.
            if case .completed = status, case .file = part {
                unlinks += parts.all
                continue
            }
            if case .file(let size) = part { partLengths[entry.id] = size }
            // What a process killed while writing metadata or finalizing leaves: nothing reads it
            // (a half-written `.tmp`; the metadata of a `.part` that is gone), and no run has started.
            unlinks.append(parts.metadataTemporary)
            if part == .missing { unlinks.append(parts.metadata) }
        }
        // What a process killed between a `remove` or `cancel` record and its unlinks left: the
        // journal says the item is gone, so its `.part` is nobody's.
        for name in contents.leftovers.sorted() { unlinks += PartNames(for: name).all }
        let (header, records) = DownloadJournal.compacted(contents.entries, nextID: contents.nextID)
        journal = DownloadJournal.encode(header: header, records)
    }

    /// What a journal entry's status becomes, given what is on disk now under its name and its
    /// `.part`'s.
    static func status(of entry: DownloadJournal.Entry, file: FileFacts, part: FileFacts)
        -> DownloadJournal.Entry.Status
    {
        switch entry.status {
        case .completed(let size):
            switch file {
            case .file(let found) where found == size: return .completed(size: size)
            case .missing, .directory: return .pending
            case .file(let found):
                return .failed(
                    DownloadManager.ItemError(
                        kind: .fileInTheWay,
                        message:
                            "\(entry.name) has \(found) bytes, not the \(size) it had when downloaded: it changed, "
                            + "and is left as it is"))
            }
        case .finishing(let size):
            // Killed between the journal's `finishing` and `done`: the rename happened when the
            // file has the size and no `.part` is left. A `.part` of another size is no proof of
            // the rename: with `.system` the record is synced before the `.part`, which a power
            // loss may then cut short — and the file of that size under the name is somebody else's.
            if case .file(let found) = file, found == size, part == .missing { return .completed(size: size) }
            // Downloaded again, killed before the rename: the completed file it replaces is still there.
            if let replaced = entry.replaced, file == .file(size: replaced.size) {
                return .completed(size: replaced.size)
            }
            return .pending
        default:
            return entry.status
        }
    }
}
