import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open folder of a `DownloadFileSystem`: every file operation of a download and of a manager's
/// journal goes through one, relative to the folder, never following a symbolic link, and only for a
/// name that is one entry of it (`DirectoryHandle.isEntryName`); anything else fails with `EINVAL`.
///
/// The folder is the one that was opened: renaming or replacing its path afterwards does not move
/// the operations elsewhere. Safe to use from any thread.
package protocol DownloadFolder: AnyObject, Sendable {
    /// The path it was opened at, for messages.
    var path: String { get }

    /// Opens the folder `name` in this one, creating it (mode 0755) when missing, never following a
    /// symbolic link: one planted under `name` fails with `ELOOP` (or `ENOTDIR`).
    ///
    /// - Returns: the folder, or the `errno` of the failure (`EINVAL` for a name that is not one entry).
    func openDirectory(_ name: String) -> Result<any DownloadFolder, POSIXError>

    /// Opens `name` with `open(2)`'s `flags` (`O_RDONLY`, `O_WRONLY` or `O_RDWR`, with `O_CREAT`,
    /// `O_EXCL`, `O_APPEND`), creating it with `mode`; never through a symbolic link.
    ///
    /// - Returns: the open file, or the `errno` of the failure.
    func openFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError>

    /// Opens `name` as `openFile` does, and only if it is a regular file with one link: a FIFO, a
    /// device or a socket under the name fails with `EINVAL` (and never blocks the open), a file
    /// hard-linked from elsewhere with `EMLINK` — writing to it would change that other name's file too.
    func openOwnedFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError>

    /// Removes the file `name` (not a directory). Nil when removed or already missing, else the `errno`.
    @discardableResult
    func unlink(_ name: String) -> POSIXErrorCode?

    /// Renames `name` to `newName` in one atomic step. Unless `replacing`, it never replaces what is
    /// under `newName` (`EEXIST` then). Nil when renamed, else the `errno`.
    func rename(_ name: String, to newName: String, replacing: Bool) -> POSIXErrorCode?

    /// What is under `name`, not following a symbolic link.
    func facts(_ name: String) -> FileFacts

    /// Which file is under `name` (not following a symbolic link); nil when nothing is.
    func identity(of name: String) -> FileIdentity?

    /// Whether this process may create files in the folder.
    var isWritable: Bool { get }

    /// Flushes the folder's entries (a rename in it) to disk; the `errno` of a failure, nil when
    /// flushed.
    @discardableResult
    func sync() -> Int32?

    /// The identity of the machine's running boot (`BootIdentity`), read once per process; nil
    /// when it cannot be read. A `.part` whose metadata names another boot may have lost bytes that
    /// were never flushed (a power loss, an operating-system crash). A test's file system changes
    /// it at each simulated power loss.
    var bootIdentity: String? { get }

    /// The downloads running to files of this file system in this process (`ActiveDestinations.process`
    /// on the real one).
    var destinations: ActiveDestinations { get }
}

extension DownloadFolder {
    /// The path of `name` in the folder, for messages.
    package func path(of name: String) -> String { path + "/" + name }

    /// `openFile(name, flags, mode: 0o600)`.
    package func openFile(_ name: String, _ flags: Int32) -> Result<any DownloadFile, POSIXError> {
        openFile(name, flags, mode: 0o600)
    }

    /// `openOwnedFile(name, flags, mode: 0o600)`.
    package func openOwnedFile(_ name: String, _ flags: Int32) -> Result<any DownloadFile, POSIXError> {
        openOwnedFile(name, flags, mode: 0o600)
    }

    /// Opens `name` (`openOwnedFile`) and locks it (`lockExclusively(until:)`), then makes sure the
    /// locked file is still the one under the name: its holder may rename a new file over it (the
    /// manager's compaction) or remove it (an empty `.part`) before letting go, and a lock on a file
    /// no longer under the name is worthless. Such a file is opened anew, up to 16 times.
    func openLockedFile(
        _ name: String, _ flags: Int32, mode: mode_t, until deadline: UInt64
    ) -> Result<any DownloadFile, LockedOpenFailure> {
        for _ in 0...16 {
            let descriptor: any DownloadFile
            switch openOwnedFile(name, flags, mode: mode) {
            case .success(let opened): descriptor = opened
            case .failure(let error): return .failure(.cannotOpen(error))
            }
            if let code = descriptor.lockExclusively(until: deadline) {
                descriptor.close()
                return .failure(.cannotLock(code))
            }
            if let locked = descriptor.identity(), locked == identity(of: name) { return .success(descriptor) }
            descriptor.close()
        }
        return .failure(.keptChanging)
    }
}

/// Why `DownloadFolder.openLockedFile` gave no file.
enum LockedOpenFailure: Error {
    /// `openOwnedFile` failed.
    case cannotOpen(POSIXError)
    /// The lock failed: `EWOULDBLOCK` when another holder still had it at the deadline, else the `errno`.
    case cannotLock(Int32)
    /// The file under the name was replaced or removed as it was locked, 17 times in a row.
    case keptChanging
}
