import Foundation

@testable import JobKitNetworking

/// A folder in memory with a process's view of it: what was written stays across a kill of the
/// process; errors are injected on the next operations that write (a full disk, an I/O error, no
/// permission).
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

    private(set) var entries: [String: Entry] = [:]
    /// The metadata beside each `.part` (a file of its own on a real disk).
    private(set) var metadata: [String: PartMetadata] = [:]
    /// Faults waiting for the next writes, first to last.
    var faults: [Fault] = []
    /// Faults that made an operation fail.
    private(set) var injectedFaults = 0

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
    mutating func plant(_ name: String, _ entry: Entry) { entries[name] = entry }

    /// Opens the `.part`: a directory or anything but a regular file is refused; a missing one is made.
    mutating func openPart(_ name: String) throws(DownloadError) {
        if case .directory = entries[name] { throw DownloadError(kind: .destinationIsDirectory, path: name) }
        if entries[name] == nil {
            try fault()
            entries[name] = .file([])
        }
    }

    mutating func truncate(_ name: String) throws(DownloadError) {
        try fault()
        entries[name] = .file([])
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
    }

    mutating func writeMetadata(_ name: String, _ value: PartMetadata) throws(DownloadError) {
        try fault()
        metadata[name] = value
    }

    func readMetadata(_ name: String) -> PartMetadata? { metadata[name] }

    mutating func unlink(_ name: String) {
        if case .directory = entries[name] { return }  // unlinkat without AT_REMOVEDIR
        entries[name] = nil
        metadata[name] = nil
    }

    /// Renames `from` to `to` unless something is under `to` (`RENAME_NOREPLACE`).
    mutating func renameNoReplace(_ from: String, to: String) throws(DownloadError) {
        guard entries[to] == nil else { throw DownloadError(kind: .destinationExists, path: to) }
        try fault()
        entries[to] = entries[from]
        entries[from] = nil
    }

    // MARK: The journal

    mutating func appendJournal(_ data: Data) throws(DownloadManagerError) {
        try journalFault()
        let old = bytes(DownloadJournal.fileName) ?? []
        entries[DownloadJournal.fileName] = .file(old + data)
    }

    mutating func replaceJournal(_ data: Data) throws(DownloadManagerError) {
        try journalFault()
        entries[DownloadJournal.fileName] = .file([UInt8](data))
    }

    var journal: Data { Data(bytes(DownloadJournal.fileName) ?? []) }

    private mutating func journalFault() throws(DownloadManagerError) {
        do {
            try fault()
        } catch {
            throw .cannotUseDirectory("(simulated)", reason: "\(error)")
        }
    }
}
