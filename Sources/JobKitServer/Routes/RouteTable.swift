import Hummingbird
import JobKit
import NIOCore
import NIOHTTPTypes

/// The server's paths and the methods each accepts, so that a request no route takes is told why:
/// 404 for an unknown path, 405 with `Allow` for a known path and another method.
final class RouteTable: Sendable {
    private struct Entry: Sendable {
        var segments: [Substring]
        var methods: [HTTPRequest.Method]
    }

    private let entries = LockedBox<[Entry]>.make([])

    /// Records that `path` (Hummingbird syntax: `:name` one segment, `**` the rest) takes `method`;
    /// `GET` brings `HEAD`, as the router does.
    func record(_ path: String, _ method: HTTPRequest.Method) {
        let segments = path.split(separator: "/")
        let methods: [HTTPRequest.Method] = method == .get ? [.get, .head] : [method]
        entries.withLock { entries in
            if let index = entries.firstIndex(where: { $0.segments == segments }) {
                entries[index].methods += methods.filter { !entries[index].methods.contains($0) }
            } else {
                entries.append(Entry(segments: segments, methods: methods))
            }
        }
    }

    /// The methods some route takes on `path`; empty when no route knows the path.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        return entries.withLock { entries in
            entries.filter { Self.matches($0.segments, segments) }.flatMap(\.methods)
        }
    }

    private static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        for (index, part) in pattern.enumerated() {
            if part == "**" { return path.count > index }
            guard index < path.count, part.hasPrefix(":") || part == path[index] else { return false }
        }
        return pattern.count == path.count
    }
}
