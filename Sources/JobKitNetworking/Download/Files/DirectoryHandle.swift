import CJobKitFiles
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open directory that every file operation of a download goes through (the real file system's
/// `DownloadFolder`, opened by `POSIXFileSystem`): each one relative to its descriptor (`openat`,
/// `renameat`, `unlinkat`, `fstatat`), never following a symbolic link, and only for a name that is
/// one entry of the directory. A name with a `/`, `.`, `..` or a NUL is
/// refused here (`EINVAL`) whatever checked it before, so no name can reach outside the directory.
///
/// The directory is the one that was opened: renaming or replacing its path afterwards does not
/// move the operations elsewhere.
final class DirectoryHandle: DownloadFolder {
    /// The path it was opened at, for messages.
    package let path: String
    let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        SystemCall.close(descriptor)
    }

    /// Opens the directory at `path` (following a symbolic link to it: the caller chose the path).
    ///
    /// - Returns: the handle, or the `errno` of the failure (`ENOTDIR` when it is not a directory).
    static func open(_ path: String) -> Result<DirectoryHandle, POSIXError> {
        let descriptor = SystemCall.open(at: AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, mode: 0)
        guard descriptor >= 0 else { return .failure(POSIXError(SystemCall.lastError())) }
        return .success(DirectoryHandle(path: path, descriptor: descriptor))
    }

    /// Opens the directory `name` in this one, creating it (mode 0755) when missing, never following a
    /// symbolic link: one planted under `name` fails with `ELOOP` (or `ENOTDIR`), whatever it points to.
    ///
    /// - Returns: the handle, or the `errno` of the failure (`EINVAL` for a name that is not one entry).
    package func openDirectory(_ name: String) -> Result<any DownloadFolder, POSIXError> {
        guard Self.isEntryName(name) else { return .failure(POSIXError(.EINVAL)) }
        if mkdirat(descriptor, name, 0o755) != 0, errno != EEXIST {
            return .failure(POSIXError(SystemCall.lastError()))
        }
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        let opened = SystemCall.open(at: descriptor, name, flags, mode: 0)
        guard opened >= 0 else { return .failure(POSIXError(SystemCall.lastError())) }
        return .success(DirectoryHandle(path: path(of: name), descriptor: opened))
    }

    /// Whether `name` is one entry of a directory: not empty, `.` or `..`, without `/` or NUL.
    static func isEntryName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains(0)
    }

    /// Opens `name` with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` always added).
    package func openFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError> {
        openDescriptor(name, flags, mode: mode).map { POSIXDownloadFile(descriptor: $0, path: path(of: name)) }
    }

    /// Opens `name` with `flags` (`O_NOFOLLOW` and `O_CLOEXEC` always added).
    ///
    /// - Returns: the descriptor, or the `errno` of the failure.
    private func openDescriptor(_ name: String, _ flags: Int32, mode: mode_t) -> Result<Int32, POSIXError> {
        guard Self.isEntryName(name) else { return .failure(POSIXError(.EINVAL)) }
        let file = SystemCall.open(at: descriptor, name, flags | O_NOFOLLOW | O_CLOEXEC, mode: mode)
        guard file >= 0 else { return .failure(POSIXError(SystemCall.lastError())) }
        return .success(file)
    }

    /// Opens `name` as `openFile` does, and only if it is a regular file with one link: a FIFO, a
    /// device or a socket under the name fails with `EINVAL` (and never blocks the open: it is made
    /// with `O_NONBLOCK`), a file hard-linked from elsewhere (perhaps outside the directory) with
    /// `EMLINK` — writing to it would change that other name's file too.
    package func openOwnedFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError> {
        let file: Int32
        switch openDescriptor(name, flags | O_NONBLOCK, mode: mode) {
        case .success(let opened): file = opened
        case .failure(let error): return .failure(error)
        }
        var info = stat()
        let problem: POSIXErrorCode?
        if fstat(file, &info) != 0 {
            problem = SystemCall.lastError()
        } else if info.st_mode & S_IFMT != S_IFREG {
            problem = .EINVAL
        } else if info.st_nlink != 1 {
            problem = .EMLINK
        } else {
            problem = nil
        }
        if let problem {
            SystemCall.close(file)
            return .failure(POSIXError(problem))
        }
        _ = fcntl(file, F_SETFL, fcntl(file, F_GETFL) & ~O_NONBLOCK)
        return .success(POSIXDownloadFile(descriptor: file, path: path(of: name)))
    }

    /// Removes the file `name` (not a directory). Nil when removed or already missing, else the `errno`.
    @discardableResult
    package func unlink(_ name: String) -> POSIXErrorCode? {
        guard Self.isEntryName(name) else { return .EINVAL }
        guard unlinkat(descriptor, name, 0) != 0, errno != ENOENT else { return nil }
        return POSIXErrorCode(rawValue: errno) ?? .EIO
    }

    /// Renames `name` to `newName` in one atomic step. Unless `replacing`, it never replaces what
    /// is under `newName` (`EEXIST` then): `renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np
    /// (RENAME_EXCL)` on Apple platforms, and a hard link then an unlink on a file system that has
    /// neither. Nil when renamed, else the `errno`.
    package func rename(_ name: String, to newName: String, replacing: Bool) -> POSIXErrorCode? {
        guard Self.isEntryName(name), Self.isEntryName(newName) else { return .EINVAL }
        if replacing {
            return renameat(descriptor, name, descriptor, newName) == 0 ? nil : SystemCall.lastError()
        }
        if jobkit_rename_noreplace(descriptor, name, descriptor, newName) == 0 { return nil }
        switch errno {
        case EINVAL, ENOSYS, ENOTSUP, EOPNOTSUPP:
            break  // the file system cannot say "do not replace" in a rename: a link never replaces either
        default:
            return SystemCall.lastError()
        }
        guard linkat(descriptor, name, descriptor, newName, 0) == 0 else { return SystemCall.lastError() }
        _ = unlinkat(descriptor, name, 0)
        return nil
    }

    /// What is under `name`, not following a symbolic link.
    package func facts(_ name: String) -> FileFacts {
        guard Self.isEntryName(name) else { return .missing }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return .missing }
        if info.st_mode & S_IFMT == S_IFDIR { return .directory }
        return .file(size: Int64(info.st_size))
    }

    /// Which file is under `name`, not following a symbolic link; nil when nothing is.
    package func identity(of name: String) -> FileIdentity? {
        guard Self.isEntryName(name) else { return nil }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Whether this process may create files in the directory.
    package var isWritable: Bool {
        faccessat(descriptor, ".", W_OK | X_OK, 0) == 0
    }

    /// Flushes the directory's entries (a rename in it) to disk; the `errno` of a failure. A file
    /// system that cannot flush a folder at all (`EINVAL`, `ENOTSUP`: some network and shared-folder
    /// file systems) is no failure: there is nothing more to do there.
    @discardableResult
    package func sync() -> Int32? {
        guard !DiskSync.sync(descriptor, path: path) else { return nil }
        let failure = errno
        return failure == EINVAL || failure == ENOTSUP ? nil : failure
    }

    /// `BootIdentity.current`.
    package var bootIdentity: String? { BootIdentity.current }

    package var destinations: ActiveDestinations { .process }

}
