import AsyncHTTPClient
import Foundation
import JobKit
import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request of a download on an AsyncHTTPClient, feeding a `TransferHandler` as the URLSession
/// path does: the response head, the body's bytes as they arrive (written before the next chunk is
/// read: the delegate's futures are already complete, so the event loop itself is the backpressure),
/// and the end, exactly once, as a `TransportError` when the transfer failed.
// AsyncHTTPClient runs the delegate's callbacks and the task's failed future one at a time on the
// task's event loop; `start` calls `finish` itself only when the request could not be built.
// Safety: `response`, `ended` and `discards` are touched only there; the task is behind a lock.
final class HTTPClientTransfer: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private enum Slot {
        case waiting
        case running(HTTPClient.Task<Void>)
        case cancelled
    }

    private let url: URL
    private let handler: TransferHandler
    private let slot = LockedBox<Slot>.make(.waiting)
    private var response: HTTPURLResponse?
    private var ended = false
    /// The rest of the body is not the handler's (it asked to stop, or failed).
    private var discards = false

    private init(url: URL, handler: TransferHandler) {
        self.url = url
        self.handler = handler
    }

    /// Sends `request` (a GET, with its headers) on `client`; cancelled with the run of `controller`.
    /// A run cancelled first never sends it (and its handler hears nothing, as on the URLSession path).
    static func start(
        _ request: URLRequest, on client: HTTPClient, handler: TransferHandler, for controller: Job<URL>.Controller
    ) {
        let url = request.url ?? URL(fileURLWithPath: "/")
        let transfer = HTTPClientTransfer(url: url, handler: handler)
        controller.onCancel { transfer.cancel() }
        let built: HTTPClient.Request
        do {
            var headers = HTTPHeaders()
            for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
            built = try HTTPClient.Request(url: url, method: .GET, headers: headers)
        } catch {
            return transfer.finish(error)
        }
        let wanted = transfer.slot.withLock { slot -> Bool in
            if case .cancelled = slot { return false }
            return true
        }
        guard wanted else { return }
        let task = client.execute(request: built, delegate: transfer)
        // A redirect cycle or one too many fails the task without telling the delegate; its future
        // completes on the request's event loop, like the delegate's callbacks.
        task.futureResult.whenFailure { error in transfer.finish(error) }
        let cancelledMeanwhile = transfer.slot.withLock { slot -> Bool in
            if case .cancelled = slot { return true }
            slot = .running(task)
            return false
        }
        if cancelledMeanwhile { task.cancel() }
    }

    /// Stops the request (AsyncHTTPClient then reports `cancelled` through `didReceiveError`).
    private func cancel() {
        let running = slot.withLock { slot -> HTTPClient.Task<Void>? in
            defer { slot = .cancelled }
            if case .running(let task) = slot { return task }
            return nil
        }
        running?.cancel()
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        var fields: [String: String] = [:]
        for (name, value) in head.headers { fields[name] = fields[name].map { "\($0), \(value)" } ?? value }
        let version = "HTTP/\(head.version.major).\(head.version.minor)"
        if let http = HTTPURLResponse(
            url: url, statusCode: Int(head.status.code), httpVersion: version, headerFields: fields)
        {
            response = http
            handler.expected = http.expectedContentLength
            do {
                if try !handler.onResponse(http) { stop(task) }
            } catch {
                handler.failure = error
                stop(task)
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard !discards else { return task.eventLoop.makeSucceededVoidFuture() }
        handler.received += Int64(buffer.readableBytes)
        do {
            if let onBytes = handler.onBytes {
                try buffer.withUnsafeReadableBytes { try onBytes($0) }
            } else {
                try handler.onData(Data(buffer.readableBytesView))
            }
        } catch {
            handler.failure = error
            stop(task)
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        finish(error)
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        finish(nil)
    }

    /// Drops the rest of the body and ends the request, after this callback.
    private func stop(_ task: HTTPClient.Task<Void>) {
        discards = true
        task.eventLoop.execute { task.cancel() }
    }

    /// Tells the handler of the end, once: its own failure first, then the transport's.
    private func finish(_ error: (any Error)?) {
        guard !ended else { return }
        ended = true
        handler.onComplete(response, handler.failure ?? error.map { Self.transportError($0, url: url) })
    }

    /// An AsyncHTTPClient or SwiftNIO error as the `TransportError` a URLSession transfer would
    /// give, so that `TransientFailure` judges both alike.
    static func transportError(_ error: any Error, url: URL) -> any Error {
        let code: URLError.Code
        switch error as? HTTPClientError {
        case .cancelled?: code = .cancelled
        case .connectTimeout?, .readTimeout?, .writeTimeout?, .deadlineExceeded?, .tlsHandshakeTimeout?,
            .getConnectionFromPoolTimeout?:
            code = .timedOut
        case .remoteConnectionClosed?, .bodyLengthMismatch?, .uncleanShutdown?: code = .networkConnectionLost
        case .redirectLimitReached?, .redirectCycleDetected?: code = .httpTooManyRedirects
        case .invalidURL?, .emptyHost?, .emptyScheme?: code = .badURL
        case .alreadyShutdown?: code = .cancelled
        case let other?:
            code = other.description.lowercased().contains("unsupported") ? .unsupportedURL : .cannotParseResponse
        case nil:
            let text = String(describing: error).lowercased()
            if text.contains("refused") || text.contains("connect") {
                code = .cannotConnectToHost
            } else if text.contains("ssl") || text.contains("tls") || text.contains("certificate") {
                code = .secureConnectionFailed
            } else {
                code = .networkConnectionLost
            }
        }
        let reason = String(describing: error)
        return TransportError(
            URLError(code, userInfo: [NSLocalizedDescriptionKey: reason, NSURLErrorFailingURLErrorKey: url]), url: url)
    }
}
