import Foundation

/// The file system a `DownloadManager` and its downloads work on: the seam a test replaces with a
/// file system in memory (with crash semantics and injected faults), so that what the manager does
/// with files is tested without a disk. `POSIXFileSystem` (the default) is the real one.
///
/// Everything past opening the manager's directory goes through the `DownloadFolder` this opens:
/// names that are one entry of a folder, never a path.
package protocol DownloadFileSystem: Sendable {
    /// Creates the directory at `path`, with its parents, when missing.
    ///
    /// - Throws: an error whose description says why it could not be made.
    func createDirectory(atPath path: String) throws

    /// Opens the directory at `path` (following a symbolic link to it: the caller chose the path).
    ///
    /// - Returns: the folder, or the `errno` of the failure (`ENOTDIR` when it is not a directory).
    func openDirectory(atPath path: String) -> Result<any DownloadFolder, POSIXError>
}
