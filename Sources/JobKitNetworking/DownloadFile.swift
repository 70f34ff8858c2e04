import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What is kept beside a `.part` to prove that a later resume continues the same resource.
struct PartMetadata: Codable, Equatable {
    var url: String
    var etag: String?
    var lastModified: String?
    /// The full length of the resource, when the server said.
    var total: Int64?

    /// The validator for `If-Range`: the ETag when there is a strong one, else Last-Modified.
    var validator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}

/// The destinations of the downloads running in this process: a second download to the same file
/// fails at once. Keyed by path, released when a download ends. (An `flock` on the `.part` guards
/// against other processes.)
enum ActiveDestinations {
    private static let paths = LockedBox<Set<String>>.make([])

    static func claim(_ path: String) -> Bool { paths.withLock { $0.insert(path).inserted } }

    static func release(_ path: String) { _ = paths.withLock { $0.remove(path) } }
}

/// The open, locked `.part` of one download, and its sidecar metadata.
///
/// Every operation on the descriptor holds the part's lock, so that `close()` — called when the
/// run is cancelled, from any thread — never races a write: once closed, writes fail and the
/// destination is free for the next download at once.
final class PartFile: Sendable {
    let destination: String
    let part: String
    let metadataPath: String
    /// The open descriptor; nil once closed.
    private let descriptor: LockedBox<Int32?>

    /// Checks the destination and its folder, claims the destination and opens its `.part` locked.
    /// Nothing is requested from the network before this succeeds.
    static func open(destination url: URL, patience: UInt64 = JournalFile.lockPatience) throws(DownloadError)
        -> PartFile
    {
        let destination = url.standardizedFileURL.path
        let folder = url.standardizedFileURL.deletingLastPathComponent().path
        var info = stat()
        if stat(destination, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw DownloadError(kind: .destinationIsDirectory, path: destination)
        }
        guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw DownloadError(kind: .folderMissing, path: folder)
        }
        guard access(folder, W_OK | X_OK) == 0 else { throw DownloadError(kind: .folderNotWritable, path: folder) }
        guard ActiveDestinations.claim(destination) else {
            throw DownloadError(kind: .destinationBusy, path: destination)
        }
        let part = destination + ".part"
        let descriptor = posixOpen(part, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            ActiveDestinations.release(destination)
            throw DownloadError(kind: .cannotWrite(errno: code), path: part)
        }
        // Another process holds it, or a child being started (by this process, a moment after an
        // earlier download of it was cancelled) shares its descriptor until it runs its program:
        // tried again for `patience` (a quarter second), as the manager's journal is.
        let deadline = DispatchTime.now().uptimeNanoseconds + patience
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR, DispatchTime.now().uptimeNanoseconds < deadline else {
                _ = posixClose(descriptor)
                ActiveDestinations.release(destination)
                throw DownloadError(kind: .destinationBusy, path: destination)
            }
            usleep(5_000)
        }
        return PartFile(destination: destination, part: part, descriptor: descriptor)
    }

    private init(destination: String, part: String, descriptor: Int32) {
        self.destination = destination
        self.part = part
        metadataPath = part + ".meta"
        self.descriptor = .make(descriptor)
    }

    /// Runs `body` with the open descriptor, under the lock; fails once the part is closed.
    private func withDescriptor<Value>(_ body: (Int32) throws(DownloadError) -> Value) throws(DownloadError)
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
        (try? withDescriptor { descriptor in
            var info = stat()
            return fstat(descriptor, &info) == 0 ? Int64(info.st_size) : 0
        }) ?? 0
    }

    /// The metadata written beside the `.part`, when there is a readable one.
    func readMetadata() -> PartMetadata? {
        guard let data = FileManager.default.contents(atPath: metadataPath), data.count < 64 * 1024 else { return nil }
        return try? JSONDecoder().decode(PartMetadata.self, from: data)
    }

    /// Writes the metadata atomically: to a temporary beside it, then renamed over it.
    func writeMetadata(_ metadata: PartMetadata) throws(DownloadError) {
        let data = (try? JSONEncoder().encode(metadata)) ?? Data()
        let temporary = metadataPath + ".tmp"
        try withDescriptor { _ throws(DownloadError) in
            let file = posixOpen(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard file >= 0 else { throw DownloadError(kind: .cannotWrite(errno: errno), path: temporary) }
            defer { _ = posixClose(file) }
            try PartFile.writeAll(data, to: file, path: temporary)
            // No fsync: a torn metadata file after a crash fails to decode, and the download then
            // starts over — never a wrong resume.
            guard rename(temporary, metadataPath) == 0 else {
                throw DownloadError(kind: .cannotWrite(errno: errno), path: metadataPath)
            }
        }
    }

    /// Empties the `.part` and forgets its metadata: the download starts over.
    func truncate() throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            unlink(metadataPath)
            guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw DownloadError(kind: .cannotWrite(errno: errno), path: part)
            }
        }
    }

    /// Positions the next write at `offset`.
    func seek(to offset: Int64) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            guard lseek(descriptor, off_t(offset), SEEK_SET) == off_t(offset) else {
                throw DownloadError(kind: .cannotWrite(errno: errno), path: part)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            guard let failure = POSIXFile.writeAll(bytes, to: descriptor) else { return }
            throw DownloadError(kind: .cannotWrite(errno: failure), path: part)
        }
    }

    /// Renames the `.part` over the destination in one atomic step; then forgets its metadata.
    /// With `.system` durability the `.part` is flushed to disk first and the folder after. Never
    /// removes the destination first: a directory there makes the rename fail and stays as it was.
    func finalize(_ durability: Durability) throws(DownloadError) {
        try withDescriptor { descriptor throws(DownloadError) in
            if durability == .system, !DiskSync.sync(descriptor, path: part) {
                throw DownloadError(kind: .cannotWrite(errno: errno), path: part)
            }
            var info = stat()
            if stat(destination, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                throw DownloadError(kind: .destinationIsDirectory, path: destination)
            }
            guard rename(part, destination) == 0 else {
                throw DownloadError(kind: .cannotWrite(errno: errno), path: destination)
            }
            if durability == .system {
                JournalFile.syncFolder(URL(fileURLWithPath: destination).deletingLastPathComponent().path)
            }
            unlink(metadataPath)
        }
    }

    /// Closes the `.part` (releasing its lock) and releases the destination. Only the first call acts.
    func close() {
        let open = descriptor.withLock { descriptor -> Int32? in
            defer { descriptor = nil }
            if let open = descriptor { _ = posixClose(open) }
            return descriptor
        }
        if open != nil { ActiveDestinations.release(destination) }
    }

    private static func writeAll(_ data: Data, to descriptor: Int32, path: String) throws(DownloadError) {
        let failure = data.withUnsafeBytes { POSIXFile.writeAll($0, to: descriptor) }
        if let failure { throw DownloadError(kind: .cannotWrite(errno: failure), path: path) }
    }
}

/// `Content-Range: bytes 100-199/1000` (or `bytes */1000` for a 416), read without trapping.
struct ContentRange: Equatable {
    /// The first and last byte of the body; nil for `bytes */total`.
    var range: ClosedRange<Int64>?
    /// The full length; nil for `*`.
    var total: Int64?

    init?(_ header: String?) {
        guard let header else { return nil }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes "), text.count < 200 else { return nil }
        let parts = text.dropFirst(6).trimmingCharacters(in: .whitespaces).split(
            separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[1] == "*" {
            total = nil
        } else {
            guard let total = Int64(parts[1]), total >= 0 else { return nil }
            self.total = total
        }
        if parts[0] == "*" {
            range = nil
        } else {
            let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0,
                first <= last
            else { return nil }
            range = first...last
        }
    }
}

#if canImport(Darwin)
    private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        Darwin.open(path, flags, mode)
    }
    private func posixClose(_ descriptor: Int32) -> Int32 { Darwin.close(descriptor) }
#elseif canImport(Glibc)
    private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        Glibc.open(path, flags, mode)
    }
    private func posixClose(_ descriptor: Int32) -> Int32 { Glibc.close(descriptor) }
#elseif canImport(Musl)
    private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { Musl.open(path, flags, mode) }
    private func posixClose(_ descriptor: Int32) -> Int32 { Musl.close(descriptor) }
#endif
