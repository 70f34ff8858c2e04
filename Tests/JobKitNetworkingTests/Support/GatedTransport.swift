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

/// A transport without sockets that shows how many transfers run at once: each request gets its
/// script's answer, its headers at once, its body only once `opensAt` answered requests are waiting
/// for theirs (from then on, at once). Bodies go in 16 KiB pieces on a serial queue, as in
/// `ScriptedTransport`; a run's cancel ends its request with `URLError(.cancelled)` before the next
/// piece.
final class GatedTransport: HTTPTransport, Sendable {
    private struct Gate: Sendable {
        var isOpen = false
        var waiting: [@Sendable () -> Void] = []
    }

    private let queue = DispatchQueue(label: "gated transport")
    private let opensAt: Int
    private let script: @Sendable (URLRequest) -> ScriptedTransport.Answer
    private let log = Watched<[URLRequest]>([])
    private let gate = Watched<Gate>(Gate())
    /// Each transfer's start and end, by its request's index, in order.
    private let timeline = LockedBox<[(request: Int, starts: Bool)]>.make([])

    /// Holds bodies until `opensAt` requests wait for theirs; answers each request with `script`.
    init(opensAt: Int, _ script: @escaping @Sendable (_ request: URLRequest) -> ScriptedTransport.Answer) {
        self.opensAt = opensAt
        self.script = script
    }

    /// The requests so far, in order.
    var requests: [URLRequest] { log.current }

    /// Suspends until `count` requests were made, resumed by the last of them.
    func untilRequests(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        await log.until("\(count) requests", sourceLocation: sourceLocation) { $0.count >= count }
    }

    /// The most transfers that ran at once among the requests from index `first` on.
    func mostAtOnce(from first: Int) -> Int {
        var running = 0
        var most = 0
        for event in timeline.withLock({ $0 }) where event.request >= first {
            running += event.starts ? 1 : -1
            most = max(most, running)
        }
        return most
    }

    /// Whether `opensAt` requests waited for their bodies at once.
    var isOpen: Bool { gate.current.isOpen }

    /// Suspends until `opensAt` requests wait for their bodies at once, resumed by the last of them.
    func untilOpen(sourceLocation: SourceLocation = #_sourceLocation) async {
        await gate.until("\(opensAt) transfers wait for their bodies at once", sourceLocation: sourceLocation) {
            $0.isOpen
        }
    }

    /// Sends every body held, and those to come, at once (for a test's cleanup).
    func open() {
        let waiting = gate.withLock { gate in
            gate.isOpen = true
            defer { gate.waiting = [] }
            return gate.waiting
        }
        for send in waiting { send() }
    }

    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?
    ) {
        let index = log.withLock { log in
            log.append(request)
            return log.count - 1
        }
        timeline.withLock { $0.append((index, true)) }
        let complete = handler.onComplete
        handler.onComplete = { [timeline] response, error in
            timeline.withLock { $0.append((index, false)) }
            complete(response, error)
        }
        let answer = script(request)
        let cancelled = LockedBox<Bool>.make(false)
        controller.onCancel { cancelled.withLock { $0 = true } }
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
            let send: @Sendable () -> Void = { [queue] in
                queue.async { Self.send(answer.body, to: handler, response: response, cancelled: cancelled) }
            }
            let released = gate.withLock { gate -> [@Sendable () -> Void] in
                if gate.isOpen { return [send] }
                gate.waiting.append(send)
                guard gate.waiting.count >= opensAt else { return [] }
                gate.isOpen = true
                defer { gate.waiting = [] }
                return gate.waiting
            }
            for send in released { send() }
        }
    }

    private static func send(
        _ body: Data, to handler: TransferHandler, response: HTTPURLResponse, cancelled: LockedBox<Bool>
    ) {
        do {
            var offset = 0
            while offset < body.count {
                if cancelled.withLock({ $0 }) { return handler.onComplete(response, URLError(.cancelled)) }
                let piece = body.subdata(
                    in: body.startIndex + offset..<body.startIndex + min(offset + 16 << 10, body.count))
                handler.received += Int64(piece.count)
                try handler.onData(piece)
                offset += piece.count
            }
            handler.onComplete(response, nil)
        } catch {
            handler.failure = error
            handler.onComplete(response, error)
        }
    }
}
