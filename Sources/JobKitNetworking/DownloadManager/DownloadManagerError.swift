import Foundation

/// Why a `DownloadManager` refused to open or to take a request.
public enum DownloadManagerError: Error, LocalizedError, Equatable, Sendable {
    /// The file name cannot be used: empty, `.` or `..`, with a `/`, a NUL or a control character,
    /// too long, or one the manager keeps for itself (its journal, a `.part`).
    case invalidName(String, reason: String)
    /// Another item of the manager has this file name (with another URL or checksum).
    case nameTaken(String, by: DownloadManager.ItemID)
    /// Not an `http` or `https` URL with a host.
    case unsupportedURL(String)
    /// An `http` or `https` URL that cannot be fetched as written: a port that is not a number
    /// from 1 to 65535 (see the reason).
    case invalidURL(String, reason: String)
    /// A request's header cannot be sent: a name that is not an HTTP token or is reserved, a value
    /// with a control character, too long, or too many headers (see `DownloadManager.Header`).
    case invalidHeader(String, reason: String)
    /// No item has this id (it was removed, or never existed).
    case unknownItem(DownloadManager.ItemID)
    /// Another manager, in this process or another one, has the directory open.
    case directoryInUse(String)
    /// The directory (or its journal) cannot be created, opened, read or written.
    case cannotUseDirectory(String, reason: String)
    /// The journal was written by a newer version of JobKit, or is not a journal: it is left as it is.
    case unsupportedJournal(String, reason: String)
    /// The manager was closed.
    case closed

    /// One line naming what was refused and why.
    public var errorDescription: String? {
        switch self {
        case .invalidName(let name, let reason): "invalid file name '\(name.escapingControlCharacters)': \(reason)"
        case .nameTaken(let name, let id): "the file name '\(name)' is already taken by download \(id)"
        case .unsupportedURL(let url): "cannot download \(url): only http and https URLs with a host are supported"
        case .invalidURL(let url, let reason): "cannot download \(url): \(reason)"
        case .invalidHeader(let name, let reason):
            "invalid header '\(String(name.prefix(80)).escapingControlCharacters)': \(reason)"
        case .unknownItem(let id): "no download \(id) in this manager"
        case .directoryInUse(let path):
            "\(path) is in use by another download manager (in this process or another one)"
        case .cannotUseDirectory(let path, let reason): "cannot use \(path): \(reason)"
        case .unsupportedJournal(let path, let reason): "cannot read the download journal \(path): \(reason)"
        case .closed: "the download manager is closed"
        }
    }
}
