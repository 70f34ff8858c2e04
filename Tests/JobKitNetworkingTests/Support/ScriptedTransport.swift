import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Logging
import Tracing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport without sockets: each request gets the answer a test's script gives it, its body fed
/// to the handler in 16 KiB pieces on a serial queue, as a client's delegate queue would. A run's
/// cancel ends its request with `URLError(.cancelled)` before the next piece.
final class ScriptedTransport: HTTPTransport, Sendable {
    /// An answer: a status, headers, a body, and whether the connection drops after `sent` bytes.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body = Data()
        /// Sends only this many bytes of `body`, then fails as a dropped connection.
        var sent: Int?
    }

    private let queue = DispatchQueue(label: "scripted transport")
    private let script: @Sendable (URLRequest, Int) -> Answer
    private let log = LockedBox<[URLRequest]>.make([])

    /// Answers the n-th request (from 0) with `script`.
    init(_ script: @escaping @Sendable (_ request: URLRequest, _ index: Int) -> Answer) {
        self.script = script
    }

    /// The requests so far, in order.
    var requests: [URLRequest] { log.withLock { $0 } }

    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?
    ) {
        let index = log.withLock {
            $0.append(request)
            return $0.count - 1
        }
        let answer = script(request, index)
        let cancelled = LockedBox<Bool>.make(false)
        controller.onCancel { cancelled.withLock { $0 = true } }
        queue.async {
            var headers = answer.headers
            headers["Content-Length"] = headers["Content-Length"] ?? String(answer.body.count)
            let response = HTTPURLResponse(
                url: request.url!, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: headers)!
            handler.expected = response.expectedContentLength
            do {
                guard try handler.onResponse(response) else {
                    return handler.onComplete(response, handler.failure ?? URLError(.cancelled))
                }
                let end = min(answer.sent ?? answer.body.count, answer.body.count)
                var offset = 0
                while offset < end {
                    if cancelled.withLock({ $0 }) { return handler.onComplete(response, URLError(.cancelled)) }
                    let piece = answer.body.subdata(
                        in: answer.body.startIndex + offset..<answer.body.startIndex + min(offset + 16 << 10, end))
                    handler.received += Int64(piece.count)
                    try handler.onData(piece)
                    offset += piece.count
                }
                handler.onComplete(response, answer.sent == nil ? nil : URLError(.networkConnectionLost))
            } catch {
                handler.failure = error
                handler.onComplete(response, error)
            }
        }
    }
}
