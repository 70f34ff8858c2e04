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
        /// Lines that did not decode, or made no sense, and were skipped.
        var ignoredLines = 0
        /// Records that decoded but were refused as input (a name that leaves the directory, a URL
        /// that is not http(s), a negative size), one line each: `line 2: …`.
        var problems: [String] = []
        /// The names of items that were removed or cancelled: their `.part`s are left over if the
        /// process stopped before removing them.
        var leftovers: Set<String> = []
    }

    enum ReadError: Error, Equatable {
        case notAJournal
        case unsupportedVersion(Int)
    }

    /// The largest item id a journal may hold (2⁶²): far beyond any real queue, far from overflow.
    static let maximumID: UInt64 = 1 << 62

    /// Reads a journal's bytes. An empty file (or one whose only line is torn) is an empty journal.
    ///
    /// The journal is input, not truth: a record passes the checks `add` makes (the name rule of
    /// `DownloadManager.checkName`, an `http` or `https` URL with a host, a checksum that parses,
    /// ids below `maximumID`, sizes from 0 to `DownloadLimits.maximumLength`, no second item of a name);
    /// a record that fails them is dropped, with a line in `problems`.
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
        var table = Table()
        var highest: UInt64 = 0
        for (index, line) in lines.enumerated() {
            guard let record = try? decoder.decode(Record.self, from: Data(line)), record.id < maximumID else {
                contents.ignoredLines += 1
                continue
            }
            switch table.apply(record) {
            case .applied:
                highest = max(highest, record.id)
            case .ignored:
                contents.ignoredLines += 1
            case .refused(let reason):
                contents.ignoredLines += 1
                contents.problems.append("line \(index + 2): \(reason)")
            }
        }
        contents.entries = table.entries.values.sorted { $0.id < $1.id }
        contents.leftovers = table.leftovers
        contents.nextID = max(header.next ?? 1, highest + 1)
        return contents
    }

    /// The items as the records so far describe them.
    private struct Table {
        var entries: [UInt64: Entry] = [:]
        var names: [String: UInt64] = [:]
        /// Names of removed items.
        var removed: Set<String> = []

        /// Names whose `.part`s nobody resumes: removed items' (unless an item has the name again)
        /// and cancelled ones'.
        var leftovers: Set<String> {
            var names = removed.subtracting(self.names.keys)
            for entry in entries.values where entry.status == .cancelled { names.insert(entry.name) }
            return names
        }

        enum Outcome: Equatable {
            case applied
            /// Makes no sense (an unknown id, a missing field): a record of a dropped item, say.
            case ignored
            /// Decoded, but refused as input; the reason names the value.
            case refused(String)
        }

        mutating func apply(_ record: Record) -> Outcome {
            switch record.op {
            case .add: return add(record)
            case .state:
                guard var entry = entries[record.id] else { return .ignored }
                switch record.state {
                case "pending": entry.status = .pending
                case "suspended": entry.status = .suspended
                case "cancelled": entry.status = .cancelled
                case "failed":
                    let kind = record.kind.flatMap(DownloadManager.Failure.Kind.init(rawValue:)) ?? .other
                    let status = record.status.flatMap { (100...999).contains($0) ? $0 : nil }
                    let reason = String((record.reason ?? "failed").prefix(2_000))
                    entry.status = .failed(DownloadManager.Failure(kind: kind, message: reason, status: status))
                default: return .refused("unknown state '\(shown(record.state ?? ""))' of item \(record.id)")
                }
                entries[record.id] = entry
                return .applied
            case .finishing, .done:
                guard var entry = entries[record.id], let size = record.size else { return .ignored }
                guard (0...DownloadLimits.maximumLength).contains(size) else {
                    return .refused("size \(size) of item \(record.id) is out of range")
                }
                entry.status = record.op == .done ? .completed(size: size) : .finishing(size: size)
                entry.ownsFile = true
                entries[record.id] = entry
                return .applied
            case .remove:
                guard let entry = entries.removeValue(forKey: record.id) else { return .ignored }
                names[entry.name] = nil
                removed.insert(entry.name)
                return .applied
            }
        }

        private mutating func add(_ record: Record) -> Outcome {
            guard let text = record.url, let name = record.name else { return .ignored }
            guard entries[record.id] == nil else { return .refused("item \(record.id) is added twice") }
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                let host = url.host, !host.isEmpty
            else { return .refused("item \(record.id) has no http(s) URL: '\(shown(text))'") }
            do {
                try DownloadManager.checkName(name)
            } catch {
                return .refused("item \(record.id) was dropped: \(error.localizedDescription)")
            }
            if let holder = names[name] {
                return .refused("item \(record.id) has the name '\(shown(name))' of item \(holder)")
            }
            var checksum: Checksum?
            if let text = record.checksum {
                guard let parsed = try? Checksum(parsing: text) else {
                    return .refused("item \(record.id) has an unreadable checksum")
                }
                checksum = parsed
            }
            entries[record.id] = Entry(id: record.id, url: url, name: name, checksum: checksum, status: .pending)
            names[name] = record.id
            return .applied
        }

        /// At most 200 characters of `text`, control characters escaped: for a message.
        private func shown(_ text: String) -> String {
            String(text.prefix(200)).escapingControlCharacters
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

/// The open journal file, holding the directory's exclusive `flock`. Created 0600 (it names the
/// URLs, which may carry tokens); one found with wider permissions is narrowed to 0600.
///
/// Not thread-safe: the manager uses it under its journal lock.
final class JournalFile {
    /// The directory's path, for messages.
    var directory: String { folder.path }
    /// The journal's path, for messages.
    var path: String { folder.path(of: DownloadJournal.fileName) }
    let folder: DirectoryHandle
    /// `.system`: `sync` and `replace` flush to disk; `.process`: they do not.
    let durability: Durability
    private(set) var descriptor: Int32
    /// Asked before each write, sync or rewrite: an `errno` to fail with (tests inject a full disk).
    private let injectedFailure: @Sendable () -> Int32?

    /// The journal's length in bytes, as this process wrote it.
    private var length: Int64 = 0

    private init(
        folder: DirectoryHandle, durability: Durability, descriptor: Int32,
        injectedFailure: @escaping @Sendable () -> Int32?
    ) {
        self.folder = folder
        self.durability = durability
        self.descriptor = descriptor
        self.injectedFailure = injectedFailure
    }

    deinit {
        close()
    }

    /// Opens the directory at `directory` (creating it if needed) for a manager.
    ///
    /// - Throws: `.cannotUseDirectory` when it cannot be made or opened, or is not a directory.
    static func openFolder(_ directory: URL) throws(DownloadManagerError) -> DirectoryHandle {
        let path = directory.standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .cannotUseDirectory(path, reason: "cannot create it (\(error.localizedDescription))")
        }
        switch DirectoryHandle.open(path) {
        case .success(let folder): return folder
        case .failure(let error) where error.code == .ENOTDIR:
            throw .cannotUseDirectory(path, reason: "not a directory")
        case .failure(let code): throw .cannotUseDirectory(path, reason: errorText(code.code.rawValue))
        }
    }

    /// Opens (creating if needed) the journal of `directory`, locked, and reads it.
    static func open(
        directory: URL, durability: Durability = .process
    ) throws(DownloadManagerError) -> (JournalFile, Data) {
        try open(in: openFolder(directory), durability: durability)
    }

    /// Opens (creating if needed) the journal in `folder`, locked, and reads it.
    ///
    /// - Throws: `.directoryInUse` when another manager holds the lock, `.cannotUseDirectory` when
    ///   the journal cannot be made, opened or read.
    static func open(
        in folder: DirectoryHandle, durability: Durability = .process,
        injectedFailure: @escaping @Sendable () -> Int32? = { nil }
    ) throws(DownloadManagerError) -> (JournalFile, Data) {
        let name = DownloadJournal.fileName
        // The lock is on the journal's inode; compaction renames a new, already locked file over it.
        // A lock won on an inode that was renamed away meanwhile is worthless: check and try again.
        // A lock that is busy is tried again for a moment: a child process being started (by this
        // process or the one that held the directory) shares the descriptors until it runs its
        // program, and keeps the lock of a manager that just closed until then.
        let deadline = DispatchTime.now().uptimeNanoseconds + lockPatience
        var renamedAway = 0
        while true {
            let descriptor: Int32
            // Only a regular file with one link: never a FIFO (which would block), nor a file
            // hard-linked from elsewhere (whose mode and bytes are somebody else's).
            switch folder.openOwnedFile(name, O_RDWR | O_CREAT | O_APPEND, mode: 0o600) {
            case .success(let opened): descriptor = opened
            case .failure(let error):
                let reason =
                    switch error.code {
                    case .EINVAL: "it is not a regular file"
                    case .EMLINK: "it has other hard links, so it is not the manager's"
                    default: errorText(error.code.rawValue)
                    }
                throw .cannotUseDirectory(folder.path, reason: "cannot open \(folder.path(of: name)): \(reason)")
            }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                _ = systemClose(descriptor)
                guard code == EWOULDBLOCK else { throw .cannotUseDirectory(folder.path, reason: errorText(code)) }
                guard DispatchTime.now().uptimeNanoseconds < deadline else { throw .directoryInUse(folder.path) }
                usleep(5_000)
                continue
            }
            var opened = stat()
            var named = stat()
            guard fstat(descriptor, &opened) == 0, fstatat(folder.descriptor, name, &named, AT_SYMLINK_NOFOLLOW) == 0,
                opened.st_ino == named.st_ino, opened.st_dev == named.st_dev
            else {
                _ = systemClose(descriptor)
                renamedAway += 1
                if renamedAway > 16 { throw .directoryInUse(folder.path) }
                continue
            }
            if opened.st_mode & 0o077 != 0 { _ = fchmod(descriptor, 0o600) }
            let file = JournalFile(
                folder: folder, durability: durability, descriptor: descriptor, injectedFailure: injectedFailure)
            return (file, try file.readAll())
        }
    }

    /// How long a busy lock is tried again before the directory counts as in use: a quarter second.
    static let lockPatience: UInt64 = 250_000_000

    /// The largest journal a manager reads (1 GiB): a bigger one was not written by a manager.
    static let maximumLength = 1 << 30

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
            guard data.count <= Self.maximumLength else {
                throw .unsupportedJournal(path, reason: "it is larger than \(Self.maximumLength >> 20) MiB")
            }
        }
    }

    /// Appends `data` (whole lines) with one write.
    ///
    /// A write that fails part-way (a full disk) is cut back off, so that the next line does not
    /// land on a torn one.
    func append(_ data: Data) throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        let failure = injectedFailure() ?? data.withUnsafeBytes { POSIXFile.writeAll($0, to: descriptor) }
        if let failure {
            _ = ftruncate(descriptor, off_t(length))
            throw .cannotUseDirectory(directory, reason: "cannot write \(path): \(Self.errorText(failure))")
        }
        length += Int64(data.count)
    }

    /// Appends `data` and syncs it (with `.system` durability): all or nothing — when the sync
    /// fails, the lines are cut back off, so that no record of a failed call is honoured later.
    func appendSynced(_ data: Data) throws(DownloadManagerError) {
        let before = length
        try append(data)
        do {
            try sync()
        } catch {
            if ftruncate(descriptor, off_t(before)) == 0 { length = before }
            throw error
        }
    }

    /// Flushes the journal to disk (with `.system` durability; else does nothing).
    func sync() throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        guard durability == .system else { return }
        if let failure = injectedFailure() {
            throw .cannotUseDirectory(directory, reason: "cannot sync \(path): \(Self.errorText(failure))")
        }
        guard DiskSync.sync(descriptor, path: path) else {
            throw .cannotUseDirectory(directory, reason: "cannot sync \(path): \(Self.errorText(errno))")
        }
    }

    /// Syncs the journal in `folder` to disk through a descriptor of its own (which holds no lock);
    /// best effort.
    static func sync(in folder: DirectoryHandle) {
        guard case .success(let file) = folder.openFile(DownloadJournal.fileName, O_RDONLY) else { return }
        _ = DiskSync.sync(file, path: folder.path(of: DownloadJournal.fileName))
        _ = systemClose(file)
    }

    /// Replaces the journal with `data`: written to a temporary file (0600) that is locked first,
    /// renamed over the journal (with `.system` durability: synced before, and the folder synced
    /// after). The old file's descriptor is closed.
    func replace(with data: Data) throws(DownloadManagerError) {
        guard descriptor >= 0 else { throw .closed }
        let temporary = DownloadJournal.fileName + ".tmp"
        let temporaryPath = folder.path(of: temporary)
        folder.unlink(temporary)
        let fresh: Int32
        switch folder.openFile(temporary, O_RDWR | O_CREAT | O_EXCL | O_APPEND, mode: 0o600) {
        case .success(let opened): fresh = opened
        case .failure(let code):
            throw .cannotUseDirectory(
                directory, reason: "cannot write \(temporaryPath): \(Self.errorText(code.code.rawValue))")
        }
        guard flock(fresh, LOCK_EX | LOCK_NB) == 0 else {
            _ = systemClose(fresh)
            throw .directoryInUse(directory)
        }
        let failure = injectedFailure() ?? data.withUnsafeBytes { POSIXFile.writeAll($0, to: fresh) }
        var code = failure
        if code == nil, durability == .system, !DiskSync.sync(fresh, path: temporaryPath) { code = errno }
        if code == nil, let renameFailure = folder.rename(temporary, to: DownloadJournal.fileName, replacing: true) {
            code = renameFailure.rawValue
        }
        if let code {
            _ = systemClose(fresh)
            folder.unlink(temporary)
            throw .cannotUseDirectory(directory, reason: "cannot rewrite \(path): \(Self.errorText(code))")
        }
        if durability == .system { folder.sync() }
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

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}

#if canImport(Darwin)
    func systemClose(_ descriptor: Int32) -> Int32 { Darwin.close(descriptor) }
#elseif canImport(Glibc)
    func systemClose(_ descriptor: Int32) -> Int32 { Glibc.close(descriptor) }
#elseif canImport(Musl)
    func systemClose(_ descriptor: Int32) -> Int32 { Musl.close(descriptor) }
#endif
