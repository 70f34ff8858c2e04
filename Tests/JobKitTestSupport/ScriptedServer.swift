import Foundation
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 whose every answer a test scripts: lying `Content-Range`s,
/// dropped connections, 416s, odd `Retry-After`s. Connections are accepted by a dispatch source
/// (no thread waits in `accept`) and served one after the other on the server's queue (an answer
/// held by a `Gate` holds no thread); every answer closes its connection.
package final class ScriptedServer: Sendable {
    /// A request as received; header names in lower case. The body is counted, and kept up to 1 MiB.
    package struct Request: Sendable {
        package var method: String
        package var path: String
        package var headers: [String: String]
        package var bodyLength: Int
        package var body: Data
    }

    /// How to answer.
    package enum Reply: Sendable {
        /// A complete response (`Content-Length` is added unless `headers` has one).
        case respond(Int, headers: [String: String] = [:], body: Data = Data())
        /// Announces `body.count` bytes, sends only the first `sent`, then closes the connection.
        case drop(headers: [String: String] = [:], body: Data, sent: Int)
        /// Announces `body.count` bytes, sends the first `sent`, and the rest once `gate` opens.
        case stall(body: Data, sent: Int, until: Gate, headers: [String: String] = [:])
        /// Sends these bytes as they are, then closes.
        case raw(Data)
        /// Answers with `reply` once `gate` opens; no thread waits meanwhile.
        indirect case waiting(for: Gate, then: Reply)
    }

    package let port: Int
    private let listener: Int32
    private let acceptor: UncheckedSource
    private let log = LockedBox<[Request]>.make([])
    private let handler: @Sendable (Request, Int) -> Reply

    /// Starts listening; `handler` answers the n-th request (from 0).
    package init(_ handler: @escaping @Sendable (_ request: Request, _ index: Int) -> Reply) throws {
        self.handler = handler
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        // Not inherited by a child a test starts (a `jobkit` command): it would keep the port
        // listening, unanswered, after this server closes it.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = descriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: ScriptedServer.acceptQueue)
        acceptor = UncheckedSource(source: source)
        source.setEventHandler { [self] in acceptPending() }
        source.setCancelHandler { close(descriptor) }
        source.resume()
    }

    private static let acceptQueue = DispatchQueue(label: "ScriptedServer.accept")
    private let serving = DispatchQueue(label: "ScriptedServer.serve")

    /// The requests received so far, in order.
    package var requests: [Request] { log.withLock { $0 } }

    package func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }

    /// Stops accepting connections.
    package func stop() {
        acceptor.source.cancel()
    }

    private func acceptPending() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            // Linux does not pass O_NONBLOCK on to accepted sockets: the connection blocks, for at
            // most 5 s a read, and is served on this server's one queue (no thread per connection).
            var limit = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            serving.async { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        guard let request = readRequest(connection) else {
            _ = close(connection)
            return
        }
        let index = log.withLock { log in
            log.append(request)
            return log.count - 1
        }
        answer(handler(request, index), on: connection)
    }

    /// Sends `reply` and closes the connection — now, or when its gate opens.
    private func answer(_ reply: Reply, on connection: Int32) {
        switch reply {
        case .waiting(let gate, let reply):
            gate.whenOpen { [self] in answer(reply, on: connection) }
        case .stall(let body, let sent, let gate, let headers):
            send(head(200, headers, length: body.count) + body.prefix(sent), on: connection)
            gate.whenOpen { [self] in
                send(body.dropFirst(sent), on: connection)
                _ = close(connection)
            }
        default:
            answerNow(reply, on: connection)
            _ = close(connection)
        }
    }

    private func answerNow(_ reply: Reply, on connection: Int32) {
        switch reply {
        case .respond(let status, let headers, let body):
            send(head(status, headers, length: body.count) + body, on: connection)
        case .drop(let headers, let body, let sent):
            send(head(200, headers, length: body.count) + body.prefix(sent), on: connection)
        case .raw(let data):
            send(data, on: connection)
        case .waiting, .stall:
            break
        }
    }

    private func head(_ status: Int, _ headers: [String: String], length: Int) -> Data {
        var text = "HTTP/1.1 \(status) Scripted\r\nConnection: close\r\n"
        if !headers.keys.contains(where: { $0.lowercased() == "content-length" }) {
            text += "Content-Length: \(length)\r\n"
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return Data((text + "\r\n").utf8)
    }

    private func send(_ data: Data, on connection: Int32) {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Glibc.send(
                    connection, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return }
                offset += sent
            }
        }
    }

    private func readRequest(_ connection: Int32) -> Request? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var received = Data()
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while headEnd == nil {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count <= 0 || received.count > 1 << 20 { return nil }
            received.append(contentsOf: buffer[0..<count])
            headEnd = received.range(of: separator)
        }
        let head = String(decoding: received[..<headEnd!.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            send(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8), on: connection)
        }
        var body = Data(received[headEnd!.upperBound...])
        var bodyLength = body.count
        let expected = headers["content-length"].flatMap(Int.init) ?? 0
        while bodyLength < expected {
            let count = recv(connection, &buffer, min(buffer.count, expected - bodyLength), 0)
            if count <= 0 { break }
            bodyLength += count
            if body.count < 1 << 20 { body.append(contentsOf: buffer[0..<count]) }
        }
        return Request(
            method: requestLine.first.map(String.init) ?? "",
            path: requestLine.dropFirst().first.map(String.init) ?? "",
            headers: headers, bodyLength: bodyLength, body: body)
    }
}

/// Opens once; what waits for it runs then (on a global queue), without holding a thread meanwhile.
package final class Gate: Sendable {
    package init() {}

    private let state = LockedBox<(isOpen: Bool, waiting: [@Sendable () -> Void])>.make((false, []))

    /// Runs `action` once the gate is open (at once if it is).
    package func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.isOpen { return true }
            state.waiting.append(action)
            return false
        }
        if runNow { DispatchQueue.global().async(execute: action) }
    }

    package func open() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { DispatchQueue.global().async(execute: action) }
    }
}

/// The listening socket's dispatch source.
// Safety: a dispatch source is thread-safe; it is only cancelled through this box.
struct UncheckedSource: @unchecked Sendable {
    let source: any DispatchSourceRead
}

extension ScriptedServer.Request {
    /// The first byte a `Range: bytes=N-` asks for, if any.
    package var rangeStart: Int? {
        guard let range = headers["range"], range.hasPrefix("bytes="), range.hasSuffix("-") else { return nil }
        return Int(range.dropFirst(6).dropLast())
    }
}
