import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// Why the server could not start.
public enum LoopbackServerError: LocalizedError, Equatable, Sendable {
    /// The address could not be bound: in use, no permission, no such host.
    case cannotListen(host: String, port: Int, reason: String)
    /// A folder under the root could not be created.
    case cannotOpenRoot(path: String, reason: String)
    /// The posts log has a line that is not a post (and is not a torn last line).
    case corruptPosts(path: String, line: Int)

    public var errorDescription: String? {
        switch self {
        case .cannotListen(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        case .cannotOpenRoot(let path, let reason): "cannot use \(path) as the server's root: \(reason)"
        case .corruptPosts(let path, let line): "cannot read \(path): line \(line) is not a post"
        }
    }

    /// The system's words for `error`: "address already in use", not an `IOError` dump.
    static func reason(of error: any Error) -> String {
        if let error = error as? IOError { return systemReason(error.errnoCode) }
        if let error = error as? SocketAddressError {
            switch error {
            case .unknown(let host, _): return "unknown host \(host)"
            default: return "invalid address"
            }
        }
        return String(describing: error)
    }

    /// `strerror`, lowercased as the rest of the line: "permission denied".
    static func systemReason(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        let reason = String(cString: text)
        return reason.prefix(1).lowercased() + reason.dropFirst()
    }
}
