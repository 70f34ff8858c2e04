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

    /// Flushes the folder's entries (a rename in it) to disk; best effort.
    func sync()

    /// The identity of the machine's running boot (`BootIdentity`), read once per process; nil
    /// when it cannot be read. A `.part` whose metadata names another boot may have lost bytes that
    /// were never flushed (a power loss, an operating-system crash). A test's file system changes
    /// it at each simulated power loss.
    var bootIdentity: String? { get }
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
}
