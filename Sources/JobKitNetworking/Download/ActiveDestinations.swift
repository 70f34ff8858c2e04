import Foundation
import JobKit

/// The destinations of the downloads running in this process: a second download to the same file
/// fails at once. Keyed by path, released when a download ends. (An `flock` on the `.part` guards
/// against other processes.)
enum ActiveDestinations {
    private static let paths = LockedBox<Set<String>>.make([])

    static func claim(_ path: String) -> Bool { paths.withLock { $0.insert(path).inserted } }

    static func release(_ path: String) { _ = paths.withLock { $0.remove(path) } }
}
