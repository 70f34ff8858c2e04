import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Logging
import Testing
import Tracing

@testable import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport without sockets: each request gets the answer a test's script gives it, its body fed
/// to the handler in 16 KiB pieces on a serial queue, as a client's delegate queue would. A run's
/// cancel ends its request with `URLError(.cancelled)` before the next piece. An answer may hold
/// the rest of its body at given offsets until `release()`, as a stalled server does; a test waits
/// for that moment with `untilHolding(_:)`.
final class ScriptedTransport: HTTPTransport, Sendable {
    /// An answer: a status, headers, a body, and whether the connection drops after `sent` bytes.
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body = Data()
        /// Sends only this many bytes of `body`, then fails as a dropped connection.
        var sent: Int?
        /// At each of these offsets of `body` (in order), holds the rest until `release()` (or the
        /// run's cancel); 0 holds it before the first byte.
        var holds: [Int] = []
    }

    /// The requests so far, and the bodies held: how the rest of each goes on, by request index.
    private struct Log: Sendable {
        var requests: [URLRequest] = []
        var held: [Int: @Sendable () -> Void] = [:]
    }

    private let queue = DispatchQueue(label: "scripted transport")
    private let script: @Sendable (URLRequest, Int) -> Answer
    private let log = Watched(Log())

    /// Answers the n-th request (from 0) with `script`.
    init(_ script: @escaping @Sendable (_ request: URLRequest, _ index: Int) -> Answer) {
        self.script = script
    }

    /// The requests so far, in order.
    var requests: [URLRequest] { log.current.requests }

    /// Suspends until `condition` holds for the requests so far, resumed by the request that makes
    /// it true (see `Watched.until`).
    @discardableResult
    func until(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (_ requests: [URLRequest]) -> Bool
    ) async -> Bool {
        await log.until(what, sourceLocation: sourceLocation) { condition($0.requests) }
    }

    /// Suspends until request `index` (from 0) holds its body at its next hold: the handler has
    /// taken every byte before it (the manager counted them).
    func untilHolding(_ index: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        await log.until("request \(index) holds its body", sourceLocation: sourceLocation) { $0.held[index] != nil }
    }

    /// Sends the rest of every body held now.
    func release() {
        let held = log.withLock { log in
            defer { log.held = [:] }
            return Array(log.held.values)
        }
        for send in held { send() }
    }

    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?
    ) {
        let index = log.withLock {
            $0.requests.append(request)
            return $0.requests.count - 1
        }
        let answer = script(request, index)
        let cancelled = LockedBox<Bool>.make(false)
        controller.onCancel { [log] in
            cancelled.withLock { $0 = true }
            // A held body goes on at once, to end as cancelled.
            log.withLock { $0.held.removeValue(forKey: index) }?()
        }
        queue.async { [self] in
            var headers = answer.headers
            headers["Content-Length"] = headers["Content-Length"] ?? String(answer.body.count)
            let response = HTTPURLResponse(
                url: request.url!, statusCode: answer.status, httpVersion: "HTTP/1.1", headerFields: headers)!
            handler.expected = response.expectedContentLength
            do {
                guard try handler.onResponse(response) else {
                    return handler.onComplete(response, handler.failure ?? URLError(.cancelled))
                }
            } catch {
                handler.failure = error
                return handler.onComplete(response, error)
            }
            send(answer, from: 0, request: index, to: handler, response: response, cancelled: cancelled)
        }
    }

    /// Feeds `answer`'s body from `offset` on, on the queue, up to its hold (then waits for `release`)
    /// or its end.
    private func send(
        _ answer: Answer, from offset: Int, request index: Int, to handler: TransferHandler,
        response: HTTPURLResponse, cancelled: LockedBox<Bool>
    ) {
        do {
            let end = min(answer.sent ?? answer.body.count, answer.body.count)
            let hold = answer.holds.first.map { min($0, end) }
            var offset = offset
            while offset < end {
                if cancelled.withLock({ $0 }) { return handler.onComplete(response, URLError(.cancelled)) }
                if offset == hold {
                    var released = answer
                    released.holds.removeFirst()
                    let rest: @Sendable () -> Void = { [self, released, offset] in
                        queue.async {
                            self.send(
                                released, from: offset, request: index, to: handler, response: response,
                                cancelled: cancelled)
                        }
                    }
                    log.withLock { $0.held[index] = rest }
                    // Cancelled meanwhile: its cancel found nothing held.
                    if cancelled.withLock({ $0 }), let rest = log.withLock({ $0.held.removeValue(forKey: index) }) {
                        rest()
                    }
                    return
                }
                let upTo = min(offset + 16 << 10, hold.map { offset < $0 ? $0 : end } ?? end, end)
                let piece = answer.body.subdata(in: answer.body.startIndex + offset..<answer.body.startIndex + upTo)
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
