import Foundation
import Hummingbird
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An append-only file with one line per request: `METHOD PATH range=RANGE status=STATUS` (`range=-` when the
/// request had no `Range` header; `status=error` when a route threw). Each line is one `write` to a file
/// opened with `O_APPEND`, so lines of concurrent requests never interleave. Written when the answer's head
/// is ready, before its body is sent.
final class AccessLog: Sendable {
    private let descriptor: Int32

    /// Opens (or creates) `file` for appending.
    init(file: URL) throws {
        descriptor = open(file.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw LoopbackServerError.cannotOpenRoot(
                path: file.path, reason: LoopbackServerError.systemReason(errno))
        }
    }

    deinit {
        close(descriptor)
    }

    /// Appends `line` and a newline (best effort: a failed write is not retried).
    func append(_ line: String) {
        let data = Array((line + "\n").utf8)
        _ = data.withUnsafeBytes { POSIXFile.writeAll($0, to: descriptor) }
    }
}
