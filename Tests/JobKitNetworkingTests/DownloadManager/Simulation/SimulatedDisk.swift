import Foundation

@testable import JobKitNetworking

/// A folder in memory with a process's view of it and the disk's: what was written stays across a
/// kill of the process (`kill -9` keeps everything); a power loss keeps only what reached the disk
/// (`losePower`); errors are injected on the next operations that write (a full disk, an I/O error,
/// no permission).
///
/// The disk follows ext4's `data=ordered` journaling: changes to names and sizes reach the disk in the
/// order they were made, and any `fsync` (of a file, the folder or the journal) commits everything
/// made before it (`sync`), as does the kernel's periodic writeback. A power loss returns the folder
/// to one of the states it went through since the last commit, and a file's bytes written since may
/// be missing there (delayed allocation: a file renamed to its name empty or short, records appended
/// to the journal gone; a journal renamed over the old one keeps its bytes) or, with
/// `zeroFill`, read as zeros (`data=writeback`). Unsynced metadata beside a `.part` may be torn (read
/// as none).
struct SimulatedDisk {
    enum Entry: Equatable {
        case file([UInt8])
        case directory
    }

    /// An error the next writing operation fails with.
    enum Fault: Equatable, CustomStringConvertible {
        case noSpace, ioError, noPermission

        var errno: Int32 {
            switch self {
            case .noSpace: ENOSPC
            case .ioError: EIO
            case .noPermission: EACCES
            }
        }

        var description: String {
            switch self {
            case .noSpace: "ENOSPC"
            case .ioError: "EIO"
            case .noPermission: "EACCES"
            }
        }
    }

    /// The folder's names and contents, as a process sees them.
    private(set) var entries: [String: Entry] = [:]
    /// The metadata beside each `.part` (a file of its own on a real disk).
    private(set) var metadata: [String: PartMetadata] = [:]
    /// The folder as the disk has it after the last commit.
    private var durable = Snapshot()
    /// The states the folder went through since that commit, oldest first: a power loss keeps one.
    private var unsynced: [Snapshot] = []
    /// The `.part`s a run of this process has open (`ActiveDestinations` and the `.part`'s `flock`).
    private var claimed: Set<String> = []
    /// Faults waiting for the next writes, first to last.
    var faults: [Fault] = []
    /// How many of the next `fsync`s fail with EIO (the data stays where it was: in the cache).
    var failingSyncs = 0
    /// Faults that made an operation fail.
    private(set) var injectedFaults = 0

    /// The folder at one moment.
    private struct Snapshot {
        var entries: [String: Entry] = [:]
        var metadata: [String: PartMetadata] = [:]
    }

    func facts(_ name: String) -> FileFacts {
        switch entries[name] {
        case nil: metadata[name] == nil ? .missing : .file(size: 1)
        case .directory: .directory
        case .file(let bytes): .file(size: Int64(bytes.count))
        }
    }

    func bytes(_ name: String) -> [UInt8]? {
        if case .file(let bytes) = entries[name] { return bytes }
        return nil
    }

    /// Takes the next fault, if any: the operation fails with it.
    private mutating func fault() throws(DownloadError) {
        guard !faults.isEmpty else { return }
        let fault = faults.removeFirst()
        injectedFaults += 1
        throw DownloadError(kind: .cannotWrite(errno: fault.errno), path: "(simulated)")
    }

    /// Puts `entry` under `name` from outside the manager (a user's file, a folder).
    mutating func plant(_ name: String, _ entry: Entry) {
        entries[name] = entry
        changed()
    }

    /// Opens the `.part` and claims it: a directory or anything but a regular file is refused, and so
    /// is one a run of this process has open; a missing one is made.
    mutating func openPart(_ name: String) throws(DownloadError) {
        if case .directory = entries[name] { throw DownloadError(kind: .destinationIsDirectory, path: name) }
        guard !claimed.contains(name) else { throw DownloadError(kind: .destinationBusy, path: name) }
        if entries[name] == nil {
            try fault()
            entries[name] = .file([])
            changed()
        }
        claimed.insert(name)
    }

    /// The run closed its `.part` (`PartFile.close`).
    mutating func release(_ name: String) { claimed.remove(name) }

    /// The process died: nothing is open.
    mutating func processDied() { claimed = [] }

    mutating func truncate(_ name: String) throws(DownloadError) {
        try fault()
        entries[name] = .file([])
        changed()
    }

    /// Writes `bytes` at `offset` (the file grows with zeros past its end, as `pwrite` does).
    mutating func write(_ name: String, at offset: Int64, _ bytes: [UInt8]) throws(DownloadError) {
        try fault()
        guard case .file(var content) = entries[name] else {
            throw DownloadError(kind: .cannotWrite(errno: EBADF), path: name)
        }
        let start = Int(offset)
        if content.count < start { content += [UInt8](repeating: 0, count: start - content.count) }
        let end = start + bytes.count
        if content.count < end { content += [UInt8](repeating: 0, count: end - content.count) }
        content.replaceSubrange(start..<end, with: bytes)
        entries[name] = .file(content)
        changed()
    }

    mutating func writeMetadata(_ name: String, _ value: PartMetadata) throws(DownloadError) {
        try fault()
        metadata[name] = value
        changed()
    }

    func readMetadata(_ name: String) -> PartMetadata? { metadata[name] }

    mutating func unlink(_ name: String) {
        if case .directory = entries[name] { return }  // unlinkat without AT_REMOVEDIR
        guard entries[name] != nil || metadata[name] != nil else { return }
        entries[name] = nil
        metadata[name] = nil
        changed()
    }

    /// Renames `from` to `to`; unless `replacing`, fails when something is under `to`
    /// (`RENAME_NOREPLACE`). A folder is never replaced.
    mutating func rename(_ from: String, to: String, replacing: Bool) throws(DownloadError) {
        guard entries[to] == nil || (replacing && entries[to] != .directory) else {
            throw DownloadError(kind: .destinationExists, path: to)
        }
        try fault()
        entries[to] = entries[from]
        entries[from] = nil
        changed()
    }

    // MARK: The journal

    mutating func appendJournal(_ data: Data) throws(DownloadManagerError) {
        try journalFault()
        let old = bytes(DownloadJournal.fileName) ?? []
        entries[DownloadJournal.fileName] = .file(old + data)
        changed()
    }

    /// Cuts the journal back to `length` bytes (`ftruncate`, after a failed sync).
    mutating func truncateJournal(to length: Int) {
        entries[DownloadJournal.fileName] = .file(Array((bytes(DownloadJournal.fileName) ?? []).prefix(length)))
        changed()
    }

    mutating func replaceJournal(_ data: Data) throws(DownloadManagerError) {
        try journalFault()
        entries[DownloadJournal.fileName] = .file([UInt8](data))
        changed()
    }

    /// `fsync` of the journal, which may fail (an injected fault).
    mutating func syncJournal() throws(DownloadManagerError) {
        do {
            try syncFile()
        } catch {
            throw .cannotUseDirectory("(simulated)", reason: "\(error)")
        }
    }

    /// `fsync` of a file, which may fail (an injected fault).
    mutating func syncFile() throws(DownloadError) {
        if failingSyncs > 0 {
            failingSyncs -= 1
            injectedFaults += 1
            throw DownloadError(kind: .cannotWrite(errno: EIO), path: "(simulated fsync)")
        }
        sync()
    }

    var journal: Data { Data(bytes(DownloadJournal.fileName) ?? []) }

    /// The journal as the disk has it since the last commit: what a power loss may come back to
    /// (or a later state: a commit is the least a loss keeps).
    var durableJournal: Data {
        if case .file(let bytes) = durable.entries[DownloadJournal.fileName] { return Data(bytes) }
        return Data()
    }

    private mutating func journalFault() throws(DownloadManagerError) {
        do {
            try fault()
        } catch {
            throw .cannotUseDirectory("(simulated)", reason: "\(error)")
        }
    }

    // MARK: Durability

    /// What was done changed the folder: a power loss may come back to this state.
    private mutating func changed() {
        unsynced.append(Snapshot(entries: entries, metadata: metadata))
        // The kernel's writeback commits what waits long enough (the older half, at once).
        if unsynced.count > 64 {
            durable = unsynced[31]
            unsynced.removeFirst(32)
        }
    }

    /// Everything done so far is on the disk (an `fsync`, a folder sync, or the kernel's writeback).
    mutating func sync() {
        durable = Snapshot(entries: entries, metadata: metadata)
        unsynced = []
    }

    /// The power goes: the folder becomes one of the states since the last commit, with the bytes
    /// that had not reached the disk missing (or zeros, with `zeroFill`), and unsynced metadata maybe
    /// torn. Pending faults are gone with the process.
    mutating func losePower(_ random: inout SimulationRandom, zeroFill: Bool) {
        let index = random.int(0...unsynced.count)
        var state = index == 0 ? durable : unsynced[index - 1]
        // In the order of names: a seed replays the same loss.
        for name in state.entries.keys.sorted() where durable.entries[name] != state.entries[name] {
            guard case .file(let content)? = state.entries[name], !content.isEmpty, random.chance(50) else { continue }
            var base = 0
            if case .file(let old) = durable.entries[name], content.starts(with: old) {
                base = old.count
            } else if name == DownloadJournal.fileName {
                continue  // a journal renamed over the old one has its data (ext4's `auto_da_alloc`)
            }
            let kept = random.int(base...content.count)
            let tail = zeroFill ? [UInt8](repeating: 0, count: content.count - kept) : []
            state.entries[name] = .file(Array(content.prefix(kept)) + tail)
        }
        for name in state.metadata.keys.sorted() where durable.metadata[name] != state.metadata[name] {
            if random.chance(30) { state.metadata[name] = nil }
        }
        (entries, metadata) = (state.entries, state.metadata)
        faults = []
        failingSyncs = 0
        sync()
    }
}
