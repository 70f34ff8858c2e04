import AsyncHTTPClient
import Foundation
import JobKit
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request of a download on an AsyncHTTPClient, feeding a `TransferHandler` as the URLSession
/// path does: the response head, the body's bytes as they arrive, and the end, exactly once, as a
/// `TransportError` when the transfer failed.
///
/// No handler callback runs on an event loop: they write, truncate and sync files. They run on
/// a blocking-I/O thread pool of its own (`fileIO`, a SwiftNIO `NIOThreadPool`), in order, one batch at a time
/// (`FileWorkBacklog`). A body part is taken at once while less than `backlogLimit` bytes of the
/// body wait to be written; beyond that, AsyncHTTPClient reads the next part only once the backlog
/// fell below it again: memory stays bounded however slow the disk. Every part that arrived before
/// the connection ended is written before the handler hears of the end.
///
/// With a `Throttle` (a `DownloadManager`'s speed limits), each body part is paid for as it
/// arrives, and the next is read only once the limiter says so: the connection's reads stop
/// meanwhile (TCP's own flow control holds the server back), with no thread waiting.
///
/// A request that waited for one of the client's connections until AsyncHTTPClient gave up
/// (`getConnectionFromPoolTimeout`: the host has working connections, all busy) never reached
/// the server: it is queued again, not failed.
// AsyncHTTPClient runs the delegate's callbacks and the task's futures on the event loop the
// transfer picked (every task of it, redirects too, is pinned there).
// Safety: `backlog`, `demand`, `throttled`, `sawHead`, `waitedForBusyConnections` and `ended` are touched only
// on that event loop; `response` and `discards` only by the batches of work, which run one after
// the other (the next is submitted, on the event loop, once the one before finished); the task is
// behind a lock.
final class HTTPClientTransfer: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private enum Slot {
        case waiting
        case running(HTTPClient.Task<Void>)
        case cancelled
    }

    /// What the handler is told, in order, on the thread pool.
    fileprivate enum Work: Sendable {
        case head(HTTPResponseHead, HTTPClient.Task<Void>)
        case body(ByteBuffer, HTTPClient.Task<Void>)
        case end((any Error)?)
    }

    /// Where the handler's callbacks run: never an event loop. A pool of JobKit's own, of at least
    /// four threads, for the life of the process: a slow write or sync of one download, or another
    /// library's work on SwiftNIO's shared pool (two threads on a two-core machine), does not hold up
    /// the bodies of the others.
    static let fileIO: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: max(4, System.coreCount))
        pool.start()
        return pool
    }()
    /// The most body bytes of one download that wait to be written before AsyncHTTPClient is
    /// asked to wait: 1 MiB.
    static let backlogLimit = 1 << 20

    private let url: URL
    private let request: HTTPClient.Request
    private let client: HTTPClient
    private let eventLoop: any EventLoop
    private let handler: TransferHandler
    /// Where AsyncHTTPClient logs the request; nil: nowhere.
    private let logger: Logger?
    private let slot = LockedBox<Slot>.make(.waiting)
    private var backlog = FileWorkBacklog<Work>()
    /// Completed once the backlog is below `backlogLimit` again and no throttle wait is on:
    /// AsyncHTTPClient waits for it.
    private var demand: EventLoopPromise<Void>?
    /// The speed limits the body is read at; nil: none.
    private let throttle: Throttle?
    /// The wait of the throttle, until the next body part may be read.
    private var throttled: Throttle.Wait?
    /// The response head arrived: the request reached the server, and is never sent again.
    private var sawHead = false
    /// The last task failed waiting for one of the host's connections, all busy.
    private var waitedForBusyConnections = false
    private var ended = false
    private var response: HTTPURLResponse?
    /// The rest of the body is not the handler's (it asked to stop, or failed).
    private var discards = false

    private init(
        url: URL, request: HTTPClient.Request, client: HTTPClient, handler: TransferHandler, logger: Logger?,
        throttle: Throttle?
    ) {
        self.url = url
        self.throttle = throttle
        self.logger = logger
        self.request = request
        self.client = client
        self.handler = handler
        eventLoop = client.eventLoopGroup.any()
    }

    /// Sends `request` (a GET, with its headers) on `client`; cancelled with the run of `controller`.
    /// A run cancelled first never sends it (and its handler hears nothing, as on the URLSession path).
    /// AsyncHTTPClient logs the request to `logger`; the body is read as fast as `throttle` allows.
    static func start(
        _ request: URLRequest, on client: HTTPClient, handler: TransferHandler, for controller: Job<URL>.Controller,
        logger: Logger? = nil, throttle: Throttle? = nil
    ) {
        let url = request.url ?? URL(fileURLWithPath: "/")
        let built: HTTPClient.Request
        do {
            var headers = HTTPHeaders()
            for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
            built = try HTTPClient.Request(url: url, method: .GET, headers: headers)
        } catch {
            // On the run's queue, as the download's first attempt: not an event loop.
            return handler.onComplete(nil, Self.transportError(error, url: url))
        }
        let transfer = HTTPClientTransfer(
            url: url, request: built, client: client, handler: handler, logger: logger, throttle: throttle)
        controller.onCancel { transfer.cancel() }
        transfer.send()
    }

    /// Executes the request on the transfer's event loop; false when the run was cancelled first.
    @discardableResult
    private func send() -> Bool {
        let wanted = slot.withLock { slot -> Bool in
            if case .cancelled = slot { return false }
            return true
        }
        guard wanted else { return false }
        let task = client.execute(request: request, delegate: self, eventLoop: .delegate(on: eventLoop), logger: logger)
        // Every failure ends here, once, after the delegate heard of it — also a redirect cycle or
        // one too many, which fail the task without telling the delegate (a redirect's own task
        // cascades into this one).
        task.futureResult.whenFailure { error in self.failed(error) }
        let cancelledMeanwhile = slot.withLock { slot -> Bool in
            if case .cancelled = slot { return true }
            slot = .running(task)
            return false
        }
        if cancelledMeanwhile { task.cancel() }
        return true
    }

    /// Stops the request (its task then fails as `cancelled`).
    private func cancel() {
        let running = slot.withLock { slot -> HTTPClient.Task<Void>? in
            defer { slot = .cancelled }
            if case .running(let task) = slot { return task }
            return nil
        }
        running?.cancel()
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        sawHead = true
        submit(.head(head, task))
        return eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        submit(.body(buffer, task), bytes: buffer.readableBytes)
        if let throttle, !ended {
            throttled = throttle.consumed(buffer.readableBytes) { [self] in
                eventLoop.execute {
                    self.throttled = nil
                    self.releaseDemand()
                }
            }
        }
        guard backlog.bytes >= Self.backlogLimit || throttled != nil else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        demand = promise
        return promise.futureResult
    }

    /// Lets AsyncHTTPClient read on, once the backlog is below its limit and the throttle's wait is over.
    private func releaseDemand() {
        guard let demand, throttled == nil, backlog.bytes < Self.backlogLimit else { return }
        self.demand = nil
        demand.succeed()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        // The task's future fails right after: `failed` ends the transfer there.
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        end(nil)
    }

    /// The task failed: sent again when it only waited for a connection, else the end.
    ///
    /// AsyncHTTPClient gives a request one deadline (the connect timeout) for waiting in its pool
    /// and for the connection it then opens. So a connect timeout right after a wait for busy
    /// connections is sent again too: the connection it waited for was opened late in its time.
    /// A second one in a row is the host's.
    private func failed(_ error: any Error) {
        let code = error as? HTTPClientError
        let onlyWaited =
            code == .getConnectionFromPoolTimeout || (code == .connectTimeout && waitedForBusyConnections)
        waitedForBusyConnections = code == .getConnectionFromPoolTimeout
        guard onlyWaited, !sawHead, !ended else { return end(error) }
        if !send() { end(HTTPClientError.cancelled) }
    }

    /// Tells the handler of the end, once, after everything before it.
    private func end(_ error: (any Error)?) {
        guard !ended else { return }
        ended = true
        // Nothing more is read: the throttle's timer goes now (a promise left waiting is released).
        if let throttled, let throttle {
            self.throttled = nil
            throttle.cancel(throttled)
            releaseDemand()
        }
        submit(.end(error))
    }

    // MARK: The handler's work, on the thread pool

    /// Queues `work` for the thread pool (on the event loop).
    private func submit(_ work: Work, bytes: Int = 0) {
        if let batch = backlog.add(work, bytes: bytes) { run(batch) }
    }

    private func run(_ batch: [Work]) {
        let handed = HandedBatch(batch)
        Self.fileIO.submit { [self] state in
            // A pool being shut down (never the singleton) runs nothing: still off the event loop.
            guard case .active = state else { return DispatchQueue.global().async { self.perform(handed) } }
            perform(handed)
        }
    }

    /// Runs a batch on the thread pool, then starts the next one (on the event loop).
    ///
    /// The batch's body buffers are let go on the event loop, not here: SwiftNIO reuses a receive
    /// buffer once it finds it uniquely referenced, and only a release on its own thread orders that
    /// reuse after this thread's last read of the bytes (the thread sanitizer saw the race).
    private func perform(_ handed: HandedBatch) {
        for work in handed.work {
            switch work {
            case .head(let head, let task): receive(head, of: task)
            case .body(let buffer, let task): receive(buffer, of: task)
            case .end(let error):
                handler.onComplete(response, handler.failure ?? error.map { Self.transportError($0, url: url) })
            }
        }
        eventLoop.execute { [self] in
            handed.work = []
            if let next = backlog.batchFinished() { run(next) }
            releaseDemand()
        }
    }

    private func receive(_ head: HTTPResponseHead, of task: HTTPClient.Task<Void>) {
        var fields: [String: String] = [:]
        for (name, value) in head.headers { fields[name] = fields[name].map { "\($0), \(value)" } ?? value }
        let version = "HTTP/\(head.version.major).\(head.version.minor)"
        guard
            let http = HTTPURLResponse(
                url: url, statusCode: Int(head.status.code), httpVersion: version, headerFields: fields)
        else { return }
        response = http
        handler.expected = http.expectedContentLength
        do {
            if try !handler.onResponse(http) { stop(task) }
        } catch {
            handler.failure = error
            stop(task)
        }
    }

    private func receive(_ buffer: ByteBuffer, of task: HTTPClient.Task<Void>) {
        guard !discards else { return }
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
    }

    /// Drops the rest of the body and ends the request.
    private func stop(_ task: HTTPClient.Task<Void>) {
        discards = true
        task.cancel()
    }

    /// An AsyncHTTPClient or SwiftNIO error as the `TransportError` a URLSession transfer would
    /// give, so that `TransientFailure` judges both alike. A certificate that fails verification is
    /// `serverCertificateUntrusted` (not transient: trying again cannot help).
    static func transportError(_ error: any Error, url: URL) -> any Error {
        var reason = String(describing: error)
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
        case nil where error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError:
            let text = reason.lowercased()
            if text.contains("certificate_verify_failed") || text.contains("hostname") {
                code = .serverCertificateUntrusted
                reason = "the server's certificate is not trusted (TLS: \(reason))"
            } else {
                code = .secureConnectionFailed
                reason = "TLS handshake failed: \(reason)"
            }
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
        return TransportError(
            URLError(code, userInfo: [NSLocalizedDescriptionKey: reason, NSURLErrorFailingURLErrorKey: url]), url: url)
    }
}

/// A batch of file work on its way to the thread pool and back: its buffers are released where the
/// event loop empties it.
// Safety: filled on the event loop, read on the thread pool, emptied on the event loop again; each
// hand-over goes through the pool's or the event loop's queue, which orders the accesses.
private final class HandedBatch: @unchecked Sendable {
    var work: [HTTPClientTransfer.Work]

    init(_ work: [HTTPClientTransfer.Work]) { self.work = work }
}
