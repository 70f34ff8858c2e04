import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one check every URL passes before a transport sees it: a `DownloadManager`'s requests and
/// new URLs (`replaceURL`, the URL refresher's), a `Job.download`'s, every redirect's `Location`,
/// the command line's and the input file's, and the `Content-Disposition` probe's.
///
/// A URL is downloadable when it is `http` or `https`, names a host, has no port or one from 1
/// to 65535, and is at most 64 KiB long. A port outside that range would reach SwiftNIO's
/// `SocketAddress`, which traps on it; one too long for Foundation to read (which then reports none)
/// would silently go to the default port instead. Both are refused here, as text, before anything
/// parses them as a number.
package enum DownloadURLCheck {
    /// Why a URL is not downloadable.
    package enum Problem: Equatable, Sendable {
        /// Not `http` or `https`, or no host.
        case unsupported
        /// A port that is not a number from 1 to 65535 (its text, at most 20 characters).
        case invalidPort(String)
        /// Longer than `maximumLength` bytes (its length): no server reads such a request line, and
        /// the manager's journal keeps its lines short.
        case tooLong(Int)

        /// The reason, for a message that names the URL before it.
        package var reason: String {
            switch self {
            case .unsupported: "only http and https URLs with a host are supported"
            case .invalidPort(let text): "the port '\(text)' is not a number from 1 to 65535"
            case .tooLong(let length): "it is \(length) bytes long; a URL has at most \(maximumLength)"
            }
        }
    }

    /// The error of a transfer whose URL has `problem`: a `TransportError` (`badURL`) that names it.
    static func transportError(_ url: URL, _ problem: Problem) -> TransportError {
        TransportError(
            URLError(
                .badURL, userInfo: [NSLocalizedDescriptionKey: problem.reason, NSURLErrorFailingURLErrorKey: url]),
            url: url)
    }

    /// The longest URL a download fetches, in bytes of its text (64 KiB).
    package static let maximumLength = 65_536

    /// What is wrong with `url`, or nil when a download may fetch it.
    package static func problem(with url: URL) -> Problem? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return .unsupported }
        let length = url.absoluteString.utf8.count
        guard length <= maximumLength else { return .tooLong(length) }
        guard let text = portText(of: url.absoluteString) else { return nil }
        guard !text.isEmpty else { return nil }  // `host:` with no digits: the default port (RFC 3986)
        let shown = String(text.prefix(20))
        guard text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text),
            (1...65535).contains(port), url.port == port
        else { return .invalidPort(shown) }
        return nil
    }

    /// The text after the host's `:` in `string`'s authority (RFC 3986: after `//`, up to the first
    /// `/`, `?` or `#`; past the userinfo's last `@`; past an IP literal's `]`); nil without one.
    private static func portText(of string: String) -> Substring? {
        guard let start = string.range(of: "://")?.upperBound else { return nil }
        let rest = string[start...]
        let authority = rest[..<(rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex)]
        var hostAndPort = authority[
            ((authority.lastIndex(of: "@")).map(authority.index(after:)) ?? authority.startIndex)...]
        if hostAndPort.hasPrefix("[") {
            guard let close = hostAndPort.firstIndex(of: "]") else { return nil }
            hostAndPort = hostAndPort[hostAndPort.index(after: close)...]
            guard hostAndPort.hasPrefix(":") else { return nil }
            return hostAndPort.dropFirst()
        }
        guard let colon = hostAndPort.firstIndex(of: ":") else { return nil }
        return hostAndPort[hostAndPort.index(after: colon)...]
    }
}
