import Foundation

/// The files `jobkit publish` uploads, and the names it stores them under on the server.
enum PublishMedia {
    /// The characters the server accepts in a media name.
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    /// The server's longest media name.
    static let maximumNameLength = 128

    /// The server-side name of the `index`th file, called `fileName` here: `RUN-INDEX-NAME`, where every
    /// character the server refuses becomes `_` and a long name keeps its end (the extension).
    ///
    /// Unique per run and per file, so a retried `PUT` overwrites only its own upload, and two runs (or two
    /// files of the same name) never overwrite each other's.
    static func name(for fileName: String, index: Int, run: String) -> String {
        let cleaned = String(fileName.map { allowed.contains($0) ? $0 : "_" })
        let prefix = "\(run)-\(index + 1)-"
        let room = maximumNameLength - prefix.count
        let kept = cleaned.count > room ? String(cleaned.suffix(room)) : cleaned
        return prefix + (kept.isEmpty ? "media" : kept)
    }

    /// The run id of the post whose Idempotency-Key is `key`: eight lowercase hexadecimal digits (FNV-1a of
    /// the key), the same on every run with that key — so a rerun with the key uploads to the same names.
    static func run(for key: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in key.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Why `path` cannot be uploaded, or nil when it can: it must be a readable regular file (a symbolic
    /// link to one is followed). A FIFO, a device, a socket or a folder is refused, and so is a file of a
    /// kernel file system (/proc, /sys), whose size says nothing of what reading it gives.
    static func problem(with path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path): \(CommandLineError.systemReason(errno))" }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return "\(path): is a directory, not a file"
        case S_IFIFO: return "\(path): is a FIFO (a named pipe), not a regular file"
        case S_IFCHR, S_IFBLK: return "\(path): is a device, not a regular file"
        case S_IFSOCK: return "\(path): is a socket, not a regular file"
        default: return "\(path): is not a regular file"
        }
        if let kind = kernelFileSystem(device: info.st_dev) {
            return "\(path): is a file of \(kind), whose size is not its contents: copy it to a regular file first"
        }
        guard access(path, R_OK) == 0 else { return "\(path): \(CommandLineError.systemReason(errno))" }
        return nil
    }

    /// The kernel file system (/proc, /sys) a file whose device is `device` is on, or nil for any other: its
    /// files share the device of the file system's root.
    private static func kernelFileSystem(device: dev_t) -> String? {
        #if os(Linux)
            for root in ["/proc", "/sys"] {
                var info = stat()
                if stat(root, &info) == 0, info.st_dev == device { return root }
            }
        #endif
        return nil
    }

    /// The size and modification time of the file at `url`, or nil.
    static func snapshot(of url: URL) -> Snapshot? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        #if os(Linux)
            let modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        #else
            let modified = Int64(info.st_mtimespec.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtimespec.tv_nsec)
        #endif
        return Snapshot(size: Int64(info.st_size), modified: modified)
    }

    /// What `snapshot(of:)` reads of a file: enough to see that it changed.
    struct Snapshot: Equatable, Sendable {
        var size: Int64
        /// Nanoseconds since 1970.
        var modified: Int64
    }

    /// A file that changed while it was uploaded: what the server got is not the file.
    struct ChangedError: Error, LocalizedError {
        var path: String
        var before: Snapshot
        var after: Snapshot?

        var errorDescription: String? {
            guard let after else { return "\(path) was removed while it was uploaded" }
            if after.size != before.size {
                return "\(path) changed size while it was uploaded (\(before.size) bytes, then \(after.size))"
            }
            return "\(path) was modified while it was uploaded"
        }
    }

    /// Throws `ChangedError` when the file at `url` is no longer as `before`.
    static func checkUnchanged(_ url: URL, since before: Snapshot) throws {
        let after = snapshot(of: url)
        guard after == before else { throw ChangedError(path: url.path, before: before, after: after) }
    }
}
