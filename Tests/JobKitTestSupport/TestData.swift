import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh folder for one test.
package func scratchFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-net-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Deterministic bytes, different for each `seed`.
package func pattern(_ count: Int, seed: Int = 1) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 101) })
}

/// The size of the file at `url`, or nil.
package func fileSize(_ url: URL) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue
}

package func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

/// A loopback port that refuses every connection for as long as this value lives: a socket bound to
/// it that never listens. (A port merely found free may be taken meanwhile by a server of a test
/// running beside.)
package final class RefusingPort: Sendable {
    package let port: Int
    private let descriptor: Int32

    package init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)  // a child a test starts keeps no copy of the port
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT/path`.
    package func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }

    deinit { close(descriptor) }
}
