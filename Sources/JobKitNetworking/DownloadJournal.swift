import Dispatch
import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The journal of a `DownloadManager`: `.jobkit-downloads.journal` in its directory, JSON lines.
///
/// Format, version 1 (each line one JSON object, keys in any order, unknown keys ignored):
///
///     {"format":"jobkit-downloads","version":1,"next":N}        the first line; N: the next id
///     {"op":"add","id":1,"url":"https://…","name":"a.bin","checksum":"sha-256=…"}
///     {"op":"state","id":1,"state":"suspended"}                  pending | suspended | cancelled
///     {"op":"state","id":1,"state":"failed","kind":"http-status","reason":"HTTP 404 …","status":404}
///     {"op":"finishing","id":1,"size":1048576}                   the .part is about to take the name
///     {"op":"done","id":1,"size":1048576}                        the file is complete under its name
///     {"op":"remove","id":1}
///
/// Records only ever append, one `write` each: a killed process loses none it wrote. With `.system`
/// durability `add` and `finishing` are synced to disk (adds before `add` returns, `finishing`
/// before the file is renamed) and `done` grouped in the background; the rest ride along. A line
/// that does not decode (the torn last line of a process killed mid-write) is ignored. A first line
/// that is not a header, or a header of another format or a newer version, makes the journal
/// unreadable: it is left as it is. Opening rewrites the journal from what it says (compaction,
/// also done once more records were appended than it had then, and at least 1,024): to a temporary
/// file, renamed over it (with `.system`, the file synced before and the folder after).
enum DownloadJournal {
    static let fileName = ".jobkit-downloads.journal"
    static let formatName = "jobkit-downloads"
    static let version = 1

    struct Header: Codable, Equatable {
        var format: String
        var version: Int
        var next: UInt64?
    }

    /// One line after the header.
    struct Record: Codable, Equatable {
        enum Op: String, Codable {
            case add, state, finishing, done, remove
        }

        var op: Op
        var id: UInt64
        var url: String?
        var name: String?
        var checksum: String?
        var state: String?
        var kind: String?
        var reason: String?
        var status: Int?
        var size: Int64?

        static func add(_ id: UInt64, url: URL, name: String, checksum: Checksum?) -> Record {
            Record(op: .add, id: id, url: url.absoluteString, name: name, checksum: checksum?.description)
        }

        static func state(_ id: UInt64, _ status: Entry.Status) -> Record {
            var record = Record(op: .state, id: id)
            switch status {
            case .pending, .finishing, .completed: record.state = "pending"
            case .suspended: record.state = "suspended"
            case .cancelled: record.state = "cancelled"
            case .failed(let failure):
                record.state = "failed"
                record.kind = failure.kind.rawValue
                record.reason = failure.message
                record.status = failure.status
            }
            return record
        }
    }

    /// What the journal says of one item.
    struct Entry: Equatable {
        enum Status: Equatable {
            case pending
            case suspended
            case cancelled
            case failed(DownloadManager.Failure)
            /// The `.part` of this size was about to be renamed to the name when the journal ended.
            case finishing(size: Int64)
            case completed(size: Int64)
        }

        var id: UInt64
        var url: URL
        var name: String
        var checksum: Checksum?
        var status: Status
        /// A `finishing` or `done` record was written: the file under the name is the manager's.
        var ownsFile = false
    }

    /// A journal, read.
    struct Contents: Equatable {
        var entries: [Entry] = []
        /// The next id to hand out.
        var nextID: UInt64 = 1
        /// Lines that did not decode and were skipped.
        var ignoredLines = 0
    }

    enum ReadError: Error, Equatable {
        case notAJournal
        case unsupportedVersion(Int)
    }

    /// The largest item id a journal may hold (2⁶²): far beyond any real queue, far from overflow.
    static let maximumID: UInt64 = 1 << 62

    /// Reads a journal's bytes. An empty file (or one whose only line is torn) is an empty journal.
    static func parse(_ data: Data) throws(ReadError) -> Contents {
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        var contents = Contents()
        guard let first = lines.popFirst() else { return contents }
        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(Header.self, from: Data(first)) else {
            // A header torn by a crash during creation, with nothing after it: no item was ever added.
            if lines.isEmpty, data.last != UInt8(ascii: "\n") { return contents }
            throw .notAJournal
        }
        guard header.format == formatName else { throw .notAJournal }
        guard header.version == version else { throw .unsupportedVersion(header.version) }
        // Ids count up from 1: one near `UInt64.max` was not written by a manager, and counting on
        // from it would overflow.
        guard (header.next ?? 1) <= maximumID else { throw .notAJournal }
        var entries: [UInt64: Entry] = [:]
        var highest: UInt64 = 0
        for line in lines {
            guard let record = try? decoder.decode(Record.self, from: Data(line)), record.id < maximumID,
                apply(record, to: &entries)
            else {
                contents.ignoredLines += 1
                continue
            }
            highest = max(highest, record.id)
        }
        contents.entries = entries.values.sorted { $0.id < $1.id }
        contents.nextID = max(header.next ?? 1, highest + 1)
        return contents
    }

    /// Applies one record; false when it makes no sense (an unknown id, a missing field).
    private static func apply(_ record: Record, to entries: inout [UInt64: Entry]) -> Bool {
        switch record.op {
        case .add:
            guard let text = record.url, let url = URL(string: text), let name = record.name else { return false }
            var checksum: Checksum?
            if let text = record.checksum {
                guard let parsed = try? Checksum(parsing: text) else { return false }
                checksum = parsed
            }
            entries[record.id] = Entry(id: record.id, url: url, name: name, checksum: checksum, status: .pending)
            return true
        case .state:
            guard var entry = entries[record.id] else { return false }
            switch record.state {
            case "pending": entry.status = .pending
            case "suspended": entry.status = .suspended
            case "cancelled": entry.status = .cancelled
            case "failed":
                let kind = record.kind.flatMap(DownloadManager.Failure.Kind.init(rawValue:)) ?? .other
                entry.status = .failed(
                    DownloadManager.Failure(kind: kind, message: record.reason ?? "failed", status: record.status))
            default: return false
            }
            entries[record.id] = entry
            return true
        case .finishing, .done:
            guard var entry = entries[record.id], let size = record.size, size >= 0 else { return false }
            entry.status = record.op == .done ? .completed(size: size) : .finishing(size: size)
            entry.ownsFile = true
            entries[record.id] = entry
            return true
        case .remove:
            return entries.removeValue(forKey: record.id) != nil
        }
    }

    /// The records that say everything `entries` say, after a header: a compacted journal.
    static func compacted(_ entries: [Entry], nextID: UInt64) -> (header: Header, records: [Record]) {
        var records: [Record] = []
        for entry in entries {
            records.append(.add(entry.id, url: entry.url, name: entry.name, checksum: entry.checksum))
            switch entry.status {
            case .completed(let size):
                records.append(Record(op: .done, id: entry.id, size: size))
            case .finishing(let size):
                records.append(Record(op: .finishing, id: entry.id, size: size))
            default:
                if entry.ownsFile {
                    // Keeps the ownership of the file under the name; the state record after it
                    // replaces its status.
                    records.append(Record(op: .finishing, id: entry.id, size: 0))
                    records.append(.state(entry.id, entry.status))
                } else if entry.status != .pending {
                    records.append(.state(entry.id, entry.status))
                }
            }
        }
        return (Header(format: formatName, version: version, next: nextID), records)
    }

    /// `header` (if any) and `records` as JSON lines, keys sorted (what `JSONEncoder` with
    /// `.sortedKeys` and `.withoutEscapingSlashes` writes, without its cost on every completion).
    static func encode(header: Header? = nil, _ records: [Record]) -> Data {
        var text = ""
        if let header {
            text += "{\"format\":\(quoted(header.format))"
            if let next = header.next { text += ",\"next\":\(next)" }
            text += ",\"version\":\(header.version)}\n"
        }
        for record in records {
            var fields: [String] = []
            if let checksum = record.checksum { fields.append("\"checksum\":\(quoted(checksum))") }
            fields.append("\"id\":\(record.id)")
            if let kind = record.kind { fields.append("\"kind\":\(quoted(kind))") }
            if let name = record.name { fields.append("\"name\":\(quoted(name))") }
            fields.append("\"op\":\(quoted(record.op.rawValue))")
            if let reason = record.reason { fields.append("\"reason\":\(quoted(reason))") }
            if let size = record.size { fields.append("\"size\":\(size)") }
            if let state = record.state { fields.append("\"state\":\(quoted(state))") }
            if let status = record.status { fields.append("\"status\":\(status)") }
            if let url = record.url { fields.append("\"url\":\(quoted(url))") }
            text += "{" + fields.joined(separator: ",") + "}\n"
        }
        return Data(text.utf8)
    }

    /// `text` as a JSON string.
    static func quoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}

/// The open journal file, holding the directory's exclusive `flock`.
///
/// Not thread-safe: the manager uses it under its journal lock.
final class JournalFile {
    let path: String
    let directory: String
    /// `.system`: `sync` and `replace` flush to disk; `.process`: they do not.
    let durability: Durability
    private(set) var descriptor: Int32

    /// The journal's length in bytes, as this process wrote it.
    private var length: Int64 = 0

    private init(path: String, directory: String, durability: Durability, descriptor: Int32) {
        self.path = path
        self.directory = directory
        self.durability = durability
        self.descriptor = descriptor
    }

    deinit {
        close()
    }

    /// Opens (creating if needed) the journal of `directory`, locked, and reads it.
    ///
    /// - Throws: `.directoryInUse` when another manager holds the lock, `.cannotUseDirectory` when
    ///   the directory or the journal cannot be made, opened or read.
    static func open(
        directory: URL, durability: Durability = .process
    ) throws(DownloadManagerError) -> (JournalFile, Data) {
        let folder = directory.standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .cannotUseDirectory(folder, reason: "cannot create it (\(error.localizedDescription))")
        }
        var info = stat()
        guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw .cannotUseDirectory(folder, reason: "not a directory")
        }
        let path = folder + "/" + DownloadJournal.fileName
        // The lock is on the journal's inode; compaction renames a new, already locked file over it.
        // A lock won on an inode that was renamed away meanwhile is worthless: check and try again.
        // A lock that is busy is tried again for a moment: a child process being started (by this
        // process or the one that held the directory) shares the descriptors until it runs its
        // program, and keeps the lock of a manager that just closed until then.
        let deadline = DispatchTime.now().uptimeNanoseconds + lockPatience
        var renamedAway = 0
        while true {
            let descriptor = systemOpen(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw .cannotUseDirectory(folder, reason: errorText(errno)) }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                _ = systemClose(descriptor)
                guard code == EWOULDBLOCK else { throw .cannotUseDirectory(folder, reason: errorText(code)) }
                guard DispatchTime.now().uptimeNanoseconds < deadline else { throw .directoryInUse(folder) }
                usleep(5_000)
                continue
            }
            var opened = stat()
            var named = stat()
            guard fstat(descriptor, &opened) == 0, stat(path, &named) == 0, opened.st_ino == named.st_ino,
                opened.st_dev == named.st_dev
            else {
                _ = systemClose(descriptor)
                renamedAway += 1
                if renamedAway > 16 { throw .directoryInUse(folder) }
                continue
            }
            let file = JournalFile(path: path, directory: folder, durability: durability, descriptor: descriptor)
            return (file, try file.readAll())
        }
    }

    /// How long a busy lock is tried again before the directory counts as in use: a quarter second.
    static let lockPatience: UInt64 = 250_000_000

    private func readAll() throws(DownloadManagerError) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count == 0 {
                length = Int64(data.count)
                return data
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .cannotUseDirectory(directory, reason: "cannot read \(path): \(Self.errorText(errno))")
            }
            data.append(contentsOf: buffer[0..<count])
            offset += off_t(count)
        }
    }

    /// Appends `data` (whole lines) with one write.
    ///
    /// A write that fails part-way (a full disk) is cut back off, so that the next line does not
    /// land on a torn one.
    func append(_ data: Data) throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        let failure = data.withUnsafeBytes { POSIXFile.writeAll($0, to: descriptor) }
        if let failure {
            _ = ftruncate(descriptor, off_t(length))
            throw .cannotUseDirectory(directory, reason: "cannot write \(path): \(Self.errorText(failure))")
        }
        length += Int64(data.count)
    }

    /// Flushes the journal to disk (with `.system` durability; else does nothing).
    func sync() throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        guard durability == .system else { return }
        guard DiskSync.sync(descriptor, path: path) else {
            throw .cannotUseDirectory(directory, reason: "cannot sync \(path): \(Self.errorText(errno))")
        }
    }

    /// Syncs the file at `path` to disk through a descriptor of its own (which holds no lock);
    /// best effort.
    static func sync(path: String) {
        let file = systemOpen(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard file >= 0 else { return }
        _ = DiskSync.sync(file, path: path)
        _ = systemClose(file)
    }

    /// Replaces the journal with `data`: written to a temporary file that is locked first, renamed
    /// over the journal (with `.system` durability: synced before, and the folder synced after). The
    /// old file's descriptor is closed.
    func replace(with data: Data) throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        let temporary = path + ".tmp"
        let fresh = systemOpen(temporary, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fresh >= 0 else {
            throw .cannotUseDirectory(directory, reason: "cannot write \(temporary): \(Self.errorText(errno))")
        }
        guard flock(fresh, LOCK_EX | LOCK_NB) == 0 else {
            _ = systemClose(fresh)
            throw .directoryInUse(directory)
        }
        let failure = data.withUnsafeBytes { POSIXFile.writeAll($0, to: fresh) }
        guard failure == nil, durability == .process || DiskSync.sync(fresh, path: temporary),
            rename(temporary, path) == 0
        else {
            let code = failure ?? errno
            _ = systemClose(fresh)
            unlink(temporary)
            throw .cannotUseDirectory(directory, reason: "cannot rewrite \(path): \(Self.errorText(code))")
        }
        if durability == .system { Self.syncFolder(directory) }
        _ = systemClose(descriptor)
        descriptor = fresh
        length = Int64(data.count)
    }

    /// Closes the journal, releasing the directory's lock. Only the first call acts.
    func close() {
        guard descriptor >= 0 else { return }
        _ = systemClose(descriptor)
        descriptor = -1
    }

    /// Syncs a folder's entries (a rename in it) to disk; best effort.
    static func syncFolder(_ path: String) {
        let folder = systemOpen(path, O_RDONLY | O_CLOEXEC, 0)
        guard folder >= 0 else { return }
        _ = DiskSync.sync(folder, path: path)
        _ = systemClose(folder)
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}

#if canImport(Darwin)
    func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }
    func systemClose(_ descriptor: Int32) -> Int32 { Darwin.close(descriptor) }
#elseif canImport(Glibc)
    func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }
    func systemClose(_ descriptor: Int32) -> Int32 { Glibc.close(descriptor) }
#elseif canImport(Musl)
    func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Musl.open(path, flags, mode) }
    func systemClose(_ descriptor: Int32) -> Int32 { Musl.close(descriptor) }
#endif
