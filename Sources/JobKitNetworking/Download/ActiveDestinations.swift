import Foundation
import JobKit

/// The destinations of the downloads running in one process, on one file system: a second download
/// to the same file fails at once. Keyed by path, released when a download ends. (An `flock` on the
/// `.part` guards against other processes.) The real file system's is `process`; a file system in
/// memory keeps one per simulated process, so that a process it kills leaves no claim behind.
package final class ActiveDestinations: Sendable {
    /// This process's, on the real file system.
    package static let process = ActiveDestinations()

    private let paths = LockedBox<Set<String>>.make([])

    package init() {}

    func claim(_ path: String) -> Bool { paths.withLock { $0.insert(path).inserted } }

    func release(_ path: String) { _ = paths.withLock { $0.remove(path) } }
}
