import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The open, locked `.part` of one download, and its sidecar metadata.
///
/// Every file operation goes through the destination folder (a `DownloadFolder`: a `DirectoryHandle`
/// on the real file system): relative to it, never following a link, never outside it. Every operation on the descriptor holds the
/// part's lock, so that `close()` — called when the run is cancelled, from any thread — never races
/// a write: once closed, writes fail and the destination is free for the next download at once.
final class PartFile: Sendable {
    let folder: any DownloadFolder
    /// The destination's name in `folder`.
    let name: String
    /// The names of the `.part` and its metadata in `folder`.
    let names: PartNames
    /// `folder/name`, for messages.
    let destination: String
    /// `folder/NAME.part`, for messages and the checksum.
    let part: String
    /// The finalize rename may replace a file under the name (`--allow-overwrite`); else a file
    /// or folder that appeared there fails it with `destinationExists`.
    let replacesDestination: Bool
    /// The open file; nil once closed.
    private let descriptor: LockedBox<(any DownloadFile)?>

    /// The bytes written to a `.part` between two flushes to disk (`sync()`) with `.system`
    /// durability: 16 MiB. After each flush the flushed length is kept in the metadata
    /// (`PartMetadata.synced`), and only that much of the `.part` is resumed after the machine
    /// restarted. Why 16 MiB: a flush only forces to disk early what the kernel writes back within
    /// about 30 s anyway, so its cost is the transfer's wait for it, once per interval — measured on
    /// an ext4 disk, 256 MiB written with a flush per 16 MiB took 0.133 s against 0.111 s with the
    /// finalize's one flush (about 1.4 ms per flush; 16 MiB takes 0.13 s to arrive at 1 Gbit/s, so
    /// about 1% there, less on slower links). A power loss costs at most 16 MiB fetched again. A
    /// file shorter than that is never flushed before its finalize, which flushes it anyway.
    static let syncInterval: Int64 = 16 << 20

    /// Checks the destination and its folder, claims the destination and opens its `.part` locked.
    /// Nothing is requested from the network before this succeeds.
    ///
    /// - Parameters:
    ///   - folder: the destination's folder, opened by the caller (a manager keeps its own).
    ///   - replacing: the finalize rename may replace a file under `name`.
    static func open(
        _ name: String, in folder: any DownloadFolder, replacing: Bool = false,
        patience: UInt64 = SystemCall.lockPatience
    ) throws(DownloadError) -> PartFile {
        let destination = folder.path(of: name)
        guard DirectoryHandle.isEntryName(name) else {
            throw DownloadError(kind: .cannotWrite(errno: EINVAL), path: destination)
        }
        switch folder.facts(name) {
        case .directory: throw DownloadError(kind: .destinationIsDirectory, path: destination)
        case .file where !replacing: throw DownloadError(kind: .destinationExists, path: destination)
        case .file, .missing: break
        }
        guard folder.isWritable else { throw DownloadError(kind: .folderNotWritable, path: folder.path) }
        guard folder.destinations.claim(destination) else {
            throw DownloadError(kind: .destinationBusy, path: destination)
        }
        let names = PartNames(for: name)
        // Another process holds it, or a child being started (by this process, a moment after an
        // earlier download of it was cancelled) shares its descriptor until it runs its program:
        // tried again for `patience`, as the manager's journal is. A holder may remove its `.part`
        // (empty, its download failed) before letting go: the one under the name is opened anew.
        let deadline = DispatchTime.now().uptimeNanoseconds + patience
        switch folder.openLockedFile(names.part, O_RDWR | O_CREAT, mode: 0o644, until: deadline) {
        case .success(let descriptor):
            return PartFile(folder: folder, name: name, names: names, replacing: replacing, descriptor: descriptor)
        case .failure(let failure):
            folder.destinations.release(destination)
            if case .cannotOpen(let code) = failure {
                throw DownloadError(kind: .cannotWrite(errno: code.code.rawValue), path: folder.path(of: names.part))
            }
            throw DownloadError(kind: .destinationBusy, path: destination)
        }
    }

    /// Opens the folder of `url` and then `open`s its last component there.
    static func open(destination url: URL, patience: UInt64 = SystemCall.lockPatience) throws(DownloadError)
        -> PartFile
    {
        let standardized = url.standardizedFileURL
        let folderPath = standardized.deletingLastPathComponent().path
        let folder: any DownloadFolder
        switch DirectoryHandle.open(folderPath) {
        case .success(let opened): folder = opened
        case .failure(let error) where error.code == .ENOENT || error.code == .ENOTDIR:
            throw DownloadError(kind: .folderMissing, path: folderPath)
        case .failure(let error) where error.code == .EACCES:
            throw DownloadError(kind: .folderNotWritable, path: folderPath)
        case .failure(let code): throw DownloadError(kind: .cannotWrite(errno: code.code.rawValue), path: folderPath)
        }
        return try open(standardized.lastPathComponent, in: folder, patience: patience)
    }

    private init(
        folder: any DownloadFolder, name: String, names: PartNames, replacing: Bool, descriptor: any DownloadFile
    ) {
        self.folder = folder
        self.name = name
        self.names = names
        destination = folder.path(of: name)
        part = folder.path(of: names.part)
        replacesDestination = replacing
        self.descriptor = .make(descriptor)
    }

    /// Runs `body` with the open descriptor, under the lock; fails once the part is closed.
    private func withDescriptor<Value>(
        _ body: (any DownloadFile) throws(DownloadError) -> Value
    ) throws(DownloadError)
        -> Value
    {
        try descriptor.withLock { descriptor -> Result<Value, DownloadError> in
            guard let open = descriptor else {
                return .failure(DownloadError(kind: .cannotWrite(errno: EBADF), path: part))
            }
            do throws(DownloadError) {
                return .success(try body(open))
            } catch {
                return .failure(error)
            }
        }
        .get()
    }

    /// The bytes already in the `.part`.
    var length: Int64 {
        (try? withDescriptor { descriptor in descriptor.size() ?? 0 }) ?? 0
    }

    /// The metadata written beside the `.part`, when there is a readable one (at most 64 KiB).
    func readMetadata() -> PartMetadata? {
        guard case .success(let file) = folder.openOwnedFile(names.metadata, O_RDONLY) else { return nil }
        defer { file.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while data.count <= 64 * 1024 {
            let count = buffer.withUnsafeMutableBytes { file.read(into: $0, at: Int64(data.count)) }
            guard case .success(let count) = count, count > 0 else { break }
            data.append(contentsOf: buffer[0..<count])
        }
        guard data.count <= 64 * 1024 else { return nil }
        return try? JSONDecoder().decode(PartMetadata.self, from: data)
    }

    /// The identity of the machine's running boot, as the folder tells it; nil when unknown.
    var bootIdentity: String? { folder.bootIdentity }

    /// Writes the metadata atomically: to a temporary beside it (mode 0600: it names the URL),
    /// then renamed over it. It is stamped with the running boot (`PartMetadata.boot`): whoever
    /// writes the `.part` in a new boot has first cut it to what was flushed before.
    ///
    /// - Parameter stale: asked under the part's lock, before anything is written; true writes
    ///   nothing (a segmented download's map that a newer one, or a start over, replaced).
    func writeMetadata(_ metadata: PartMetadata, unless stale: () -> Bool = { false }) throws(DownloadError) {
        var stamped = metadata
        stamped.boot = folder.bootIdentity ?? ""
        let data = (try? JSONEncoder().encode(stamped)) ?? Data()
        let temporary = names.metadataTemporary
        try withDescriptor { _ throws(DownloadError) in
            if stale() { return }
            folder.unlink(temporary)
            let file: any DownloadFile
            switch folder.openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) {
            case .success(let opened): file = opened
            case .failure(let code):
                throw DownloadError(kind: .cannotWrite(errno: code.code.rawValue), path: folder.path(of: temporary))
            }
            // A write or rename that fails (a full disk) leaves no temporary: the `.part`'s removal
            // unlinks only the `.part` and its metadata.
            var renamed = false
            defer {
                file.close()
                if !renamed { folder.unlink(temporary) }
            }
            try PartFile.writeAll(data, to: file, path: folder.path(of: temporary))
            // No fsync: a torn metadata file after a crash fails to decode, and the download then
            // starts over — never a wrong resume.
            if let code = folder.rename(temporary, to: names.metadata, replacing: true) {
                throw DownloadError(kind: .cannotWrite(errno: code.rawValue), path: folder.path(of: names.metadata))
            }
            renamed = true
        }
    }

    /// Empties the `.part` and forgets its metadata: the download starts over.
    func truncate() throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            folder.unlink(names.metadata)
            try cut(descriptor, to: 0)
        }
    }

    /// Cuts the `.part` to its first `length` bytes, keeping its metadata: a resume continues from
    /// what was flushed before the machine restarted.
    func truncate(to length: Int64) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in try cut(descriptor, to: length) }
    }

    /// Cuts `descriptor` to `length` bytes and positions the next write there. A file already of
    /// that length is not truncated: on ext4 a truncate to zero marks the file to be flushed when it
    /// is closed (its guard for files rewritten in place), which started the disk writing every
    /// downloaded file — each a new, empty `.part` — as it took its name.
    private func cut(_ descriptor: any DownloadFile, to length: Int64) throws(DownloadError) {
        let isCut = descriptor.size() == length
        if let failure = (isCut ? nil : descriptor.truncate(to: length)) ?? descriptor.seek(to: length) {
            throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
        }
    }

    /// Flushes the `.part`'s bytes to disk (`fsync`), for `.system` durability's interval flushes:
    /// through a second open file, so that the other connections of a segmented download write on
    /// while it waits (what they write meanwhile may or may not be flushed with it).
    func sync() throws(DownloadError) {
        let failure: Int32?
        do {
            failure = try reading { $0.sync() }
        } catch let error as DownloadError {
            throw error
        } catch {
            failure = EIO
        }
        if let failure { throw DownloadError(kind: .cannotWrite(errno: failure), path: part) }
    }

    /// Positions the next write at `offset`.
    func seek(to offset: Int64) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            if let failure = descriptor.seek(to: offset) {
                throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
            }
        }
    }

    /// Writes `bytes` at `offset` (`pwrite`), leaving the position of `write(_:)` as it is: a
    /// segmented download's connections write their ranges side by side. `stale`, asked under the
    /// part's lock first, skips the write when true (a connection of a split that stopped).
    func write(
        _ bytes: UnsafeRawBufferPointer, at offset: Int64, unless stale: () -> Bool = { false }
    ) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            if stale() { return }
            if let failure = descriptor.write(bytes, at: offset) {
                throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            guard let failure = descriptor.write(bytes) else { return }
            throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
        }
    }

    /// Runs `body` with a second open file of the `.part` (read-only use: the checksum, with
    /// positional reads); fails once the part is closed.
    func reading<Value>(_ body: (any DownloadFile) throws -> Value) throws -> Value {
        let copy = try withDescriptor { descriptor throws(DownloadError) in
            switch descriptor.duplicate() {
            case .success(let copy): return copy
            case .failure(let code): throw DownloadError(kind: .cannotWrite(errno: code.code.rawValue), path: part)
            }
        }
        defer { copy.close() }
        return try body(copy)
    }

    /// Renames the `.part` to the destination's name in one atomic step that never replaces what is
    /// there (unless `replacesDestination`); then forgets its metadata. With `.system` durability
    /// the `.part` is flushed to disk first and the folder after (a flush of the folder that fails
    /// gives the `.part` its name back and throws: the rename might not survive a power loss; a
    /// file system that cannot flush a folder at all counts as flushed). A file or folder that appeared
    /// under the name fails it with `destinationExists`, the `.part` kept and the other left as it is.
    ///
    /// - Parameter abandoned: asked under the part's lock, after the flush and just before the
    ///   rename (a download's cancellation: its cancel handler closes the part, which waits for that
    ///   lock); true leaves the `.part` and its metadata as they are.
    /// - Returns: whether the `.part` took the destination's name (false: `abandoned`).
    func finalize(_ durability: Durability, unless abandoned: () -> Bool) throws(DownloadError) -> Bool {
        try withDescriptor { descriptor throws(DownloadError) in
            if durability == .system, let failure = descriptor.sync() {
                throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
            }
            // A folder that appeared under the name is `destinationExists`, as a file is (the rename
            // never replaces either); one a replacing rename cannot replace says what it is.
            if replacesDestination, folder.facts(name) == .directory {
                throw DownloadError(kind: .destinationIsDirectory, path: destination)
            }
            if abandoned() { return false }
            switch folder.rename(names.part, to: name, replacing: replacesDestination) {
            case nil: break
            case .EEXIST?, .ENOTEMPTY?, .EISDIR?: throw DownloadError(kind: .destinationExists, path: destination)
            case let code?: throw DownloadError(kind: .cannotWrite(errno: code.rawValue), path: destination)
            }
            // The name would not survive a power loss: the download is not done, and the `.part`
            // takes its own name back, so that a retry or a resume finishes it. When even that
            // fails, the file keeps its name (it is complete; only the flush is missing).
            if durability == .system, let failure = folder.sync(),
                folder.rename(name, to: names.part, replacing: false) == nil
            {
                throw DownloadError(kind: .cannotWrite(errno: failure), path: folder.path)
            }
            folder.unlink(names.metadata)
            return true
        }
    }

    /// Closes the `.part` (releasing its lock) and releases the destination. Only the first call acts.
    ///
    /// - Parameter removingIfEmpty: a `.part` that holds no byte is removed first, with its metadata
    ///   (a download that failed before its first byte leaves nothing to resume, and nothing behind).
    func close(removingIfEmpty: Bool = false) {
        let open = descriptor.withLock { descriptor -> (any DownloadFile)? in
            defer { descriptor = nil }
            guard let open = descriptor else { return nil }
            // Still locked: nobody else writes or renames it meanwhile.
            if removingIfEmpty, open.size() == 0 {
                for name in [names.part, names.metadata, names.metadataTemporary] { folder.unlink(name) }
            }
            open.close()
            return open
        }
        if open != nil { folder.destinations.release(destination) }
    }

    private static func writeAll(_ data: Data, to file: any DownloadFile, path: String) throws(DownloadError) {
        let failure = data.withUnsafeBytes { file.write($0) }
        if let failure { throw DownloadError(kind: .cannotWrite(errno: failure), path: path) }
    }
}
