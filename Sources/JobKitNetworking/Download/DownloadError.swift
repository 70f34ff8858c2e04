import Foundation

/// A file operation of a download that failed, with the path and the system's reason.
///
/// `cannot write /tmp/out/file.part: No such file or directory`.
public struct DownloadError: Error, LocalizedError, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The destination is an existing directory; it is left as it was.
        case destinationIsDirectory
        /// The folder of the destination does not exist.
        case folderMissing
        /// The folder of the destination exists but cannot be written.
        case folderNotWritable
        /// Another download to the same destination is running, in this process or another.
        case destinationBusy
        /// A file is under the destination's name, or a file or folder appeared there while the
        /// download ran: it is left exactly as it is (a complete `.part` is kept beside it).
        case destinationExists
        /// A file could not be created, written, synced or renamed; `errno` says why.
        case cannotWrite(errno: Int32)
        /// The server's answer did not add up: a `Content-Range` that does not continue the `.part`,
        /// or fewer bytes than it announced.
        case inconsistentResponse(String)
    }

    /// What went wrong.
    public let kind: Kind
    /// The path involved: the destination, its folder, or the `.part`.
    public let path: String

    public var errorDescription: String? {
        switch kind {
        case .destinationIsDirectory: "cannot download to \(path): it is a directory"
        case .folderMissing: "cannot download into \(path): no such folder"
        case .folderNotWritable: "cannot download into \(path): the folder is not writable"
        case .destinationBusy: "cannot download to \(path): another download to it is running"
        case .destinationExists:
            "cannot download to \(path): a file or folder is under its name (it was there, or appeared while the "
                + "download ran); it is left as it is"
        case .cannotWrite(let code): "cannot write \(path): \(SystemCall.errorText(code))"
        case .inconsistentResponse(let reason): "download to \(path) failed: \(reason)"
        }
    }

    public var description: String { errorDescription! }
}
