import Foundation
import JobKitTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP connection to a loopback port, for requests no HTTP client would send.
struct RawSocket {
    private let descriptor: Int32

    /// Connects to `127.0.0.1:port`; reads give up after `timeout` seconds of silence.
    init(port: Int, timeout: Int = 120) throws {
        #if canImport(Glibc)
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)  // a child a test starts keeps no copy of the connection
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            _ = Glibc.close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
        }
    }

    /// Sends all of `bytes`; false when the server closed the connection first.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                Glibc.send(descriptor, buffer.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// No more bytes from this side.
    func finishSending() {
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Reads until the server closes, `limit` bytes arrived, `until` appears, or the timeout passes.
    func receive(limit: Int = 1 << 20, until marker: String? = nil) -> (bytes: [UInt8], timedOut: Bool) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while received.count < limit {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, $0.count, 0) }
            if count == 0 { return (received, false) }
            if count < 0 { return (received, errno == EAGAIN || errno == EWOULDBLOCK) }
            received += chunk[0..<count]
            if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
        }
        return (received, false)
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}

/// The resident memory of this process, in bytes (Linux; nil elsewhere).
func residentMemory() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
}

/// Runs blocking socket code on a thread of its own (`offThePool`), never on one of Swift
/// concurrency's few threads — the in-process server answers on those, and a test blocked in `recv`
/// there could starve it — nor on GCD's global queues, as narrow on Linux.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await offThePool { Result { try body() } }.get()
}
