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
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One request of a download on an AsyncHTTPClient, feeding a `TransferHandler` as the URLSession
/// path does: the response head, the body's bytes as they arrive, and the end, exactly once, as a
/// `TransportError` when the transfer failed.
///
/// The handler's callbacks write, truncate and sync files. A handler that never flushes nor cuts
/// a large file (`TransferHandler.isQuick`: a fresh download, not a resume, without `.system`
/// durability) is called on the event
/// loop itself while nothing waits for the pool, as curl writes from its one thread: a write to
/// the page cache takes microseconds, and a hop to another thread and back per body part cost
/// more than it. A callback that took longer than `slowWork` (a disk that is behind, a network
/// file system) sends the transfer's later work to the pool for good. A callback that comes while
/// another runs inline (a progress observer that cancels the run, whose end then arrives at once)
/// waits for it on the loop. The others, and every
/// callback that arrives while work waits, run on a blocking-I/O thread pool of JobKit's own
/// (`fileIO`, a SwiftNIO `NIOThreadPool`), in order, one batch at a time (`FileWorkBacklog`). A
/// body part is taken at once while less than `backlogLimit` bytes of the body wait to be
/// written; beyond that, AsyncHTTPClient reads the next part only once the backlog fell below it
/// again: memory stays bounded however slow the disk. Every part that arrived before the
/// connection ended is written before the handler hears of the end.
///
/// With a `Throttle` (a `DownloadManager`'s speed limits), each body part is paid for as it
/// arrives, and the next is read only once the limiter says so: the connection's reads stop
/// meanwhile (TCP's own flow control holds the server back), with no thread waiting.
///
/// A request that waited for one of the client's connections until AsyncHTTPClient gave up
/// (`getConnectionFromPoolTimeout`: the host has working connections, all busy) never reached
/// the server: it is queued again, not failed.
///
/// Every URL is checked (`DownloadURLCheck`) before AsyncHTTPClient sees it: the request's, and
/// each redirect's. Redirects that reach the delegate (a client made with `.disallow`, as a
/// `DownloadManager`'s is) are followed here (`Redirect`): at most ten, no cycle, and the
/// `Authorization` (from the URL's `user:password@`, RFC 7617, unless a header sets one), cookies
/// and `Origin` go to the first URL's origin only. A client that follows redirects itself does so
/// unchecked.
///
/// The server may stay silent for `silenceLimit` while the transfer reads (`ReadSilence`): the
/// time the transfer holds the connection back itself (a speed limit's wait, a disk behind) does
/// not count. The client's own read timeout, if any, counts every silence (a `DownloadManager`'s
/// client has none).
// Safety: AsyncHTTPClient runs the delegate's callbacks and the task's futures on the event loop
// the transfer picked (every task of it, redirects too, is pinned there). `backlog`, `demand`, `throttled`, `sawHead`, `waitedForBusyConnections`, `ended`,
// `request` (after the first `send`, which runs before any callback), `visited`, `nextRequest`,
// `refusal`, `silence`, `silenceTimer`, `worksInline` and `performsInline` are touched only on
// that event loop;
// `response` and `discards` only by the handler's work, which runs one piece after the other: on
// the event loop while no batch runs, or in batches (the next is submitted, on the event loop,
// once the one before finished); the task is behind a lock.
final class HTTPClientTransfer: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private enum Slot {
        case waiting
        case running(HTTPClient.Task<Void>)
        case cancelled
    }

    /// What the handler is told, in order, on the event loop or the thread pool.
    fileprivate enum Work: Sendable {
        case head(HTTPResponseHead, HTTPClient.Task<Void>)
        case body(ByteBuffer, HTTPClient.Task<Void>)
        case end((any Error)?)
    }

    /// Where the handler's callbacks run when not on the event loop. A pool of JobKit's own, of at least
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
    /// A callback of the handler run on the event loop that takes longer than this sends the
    /// transfer's later work to the pool: 2 ms (a write to the page cache takes microseconds).
    static let slowWork: UInt64 = 2_000_000

    /// How long a server may stay silent while a transfer reads, unless told otherwise: a minute.
    static let defaultSilenceLimit: Duration = .seconds(60)

    private let url: URL
    /// The request being sent: the first, or the redirect being followed.
    private var request: HTTPClient.Request
    /// The URLs asked for so far: the first and each redirect's.
    private var visited: [URL]
    /// The redirect to follow once the task of the current request has ended.
    private var nextRequest: HTTPClient.Request?
    /// Why the transfer ends although its task ends as cancelled: a redirect that cannot be
    /// followed, or a server silent for too long.
    private var refusal: (any Error)?
    /// How long the server has been silent while the transfer read.
    private var silence: ReadSilence
    /// The clock of `silence`.
    private let silenceScheduler: any JobScheduler
    /// The check of `silence` at its deadline, when armed.
    private var silenceTimer: ScheduledAction?
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
    /// The handler's work runs on the event loop while no batch runs (see `slowWork`).
    private var worksInline: Bool
    /// A piece of the handler's work runs on the event loop now.
    private var performsInline = false

    private init(
        url: URL, request: HTTPClient.Request, client: HTTPClient, handler: TransferHandler, logger: Logger?,
        throttle: Throttle?, silenceLimit: Duration, silenceScheduler: (any JobScheduler)?
    ) {
        eventLoop = client.eventLoopGroup.any()
        self.url = url
        self.throttle = throttle
        visited = [url]
        self.silenceScheduler = silenceScheduler ?? EventLoopScheduler(eventLoop: eventLoop)
        silence = ReadSilence(limit: silenceLimit, now: self.silenceScheduler.now)
        silence.paused()  // until the request is sent: a wait in the client's pool is not the server's

        self.logger = logger
        self.request = request
        self.client = client
        self.handler = handler
        worksInline = handler.isQuick
    }

    /// Sends `request` (a GET, with its headers) on `client`; cancelled with the run of `controller`.
    /// A run cancelled first never sends it (and its handler hears nothing, as on the URLSession path).
    /// AsyncHTTPClient logs the request to `logger`; the body is read as fast as `throttle` allows,
    /// and the server may stay silent for `silenceLimit` (on `silenceScheduler`'s clock; nil: the
    /// transfer's event loop's) while the
    /// transfer reads. A URL that `DownloadURLCheck` refuses ends the transfer at once, as a
    /// `TransportError` (`badURL`) that names it.
    static func start(
        _ request: URLRequest, on client: HTTPClient, handler: TransferHandler, for controller: Job<URL>.Controller,
        logger: Logger? = nil, throttle: Throttle? = nil, silenceLimit: Duration = defaultSilenceLimit,
        silenceScheduler: (any JobScheduler)? = nil
    ) {
        let url = request.url ?? URL(fileURLWithPath: "/")
        let built: HTTPClient.Request
        do {
            if let problem = DownloadURLCheck.problem(with: url) { throw DownloadURLCheck.transportError(url, problem) }
            var headers = HTTPHeaders()
            for (name, value) in request.allHTTPHeaderFields ?? [:] { headers.add(name: name, value: value) }
            if let authorization = url.basicAuthorization, !headers.contains(name: "Authorization") {
                headers.add(name: "Authorization", value: authorization)
            }
            built = try HTTPClient.Request(url: url, method: .GET, headers: headers)
        } catch {
            // On the run's queue, as the download's first attempt: not an event loop.
            return handler.onComplete(nil, Self.transportError(error, url: url))
        }
        let transfer = HTTPClientTransfer(
            url: url, request: built, client: client, handler: handler, logger: logger, throttle: throttle,
            silenceLimit: silenceLimit, silenceScheduler: silenceScheduler)
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

    func didSendRequest(task: HTTPClient.Task<Void>) {
        // On a connection now: from here on, the server's silence counts.
        silence.resumed(at: silenceScheduler.now)
        armSilence()
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        sawHead = true
        silence.heard(at: silenceScheduler.now)
        let step = Redirect.step(
            status: Int(head.status.code), location: head.headers.first(name: "location"), from: request.url,
            visited: visited)
        switch step {
        case .answer:
            submit(.head(head, task))
        case .follow(let target):
            var headers = request.headers
            if !Redirect.isSameOrigin(request.url, target) {
                for name in Redirect.originBoundHeaders { headers.remove(name: name) }
            }
            do {
                nextRequest = try HTTPClient.Request(url: target, method: .GET, headers: headers)
                visited.append(target)
            } catch {
                refusal = Self.transportError(error, url: target)
            }
            // Its body is not wanted; the redirect is sent once the task has ended (after this callback).
            eventLoop.execute { task.cancel() }
        case .refuse(let reason):
            let code: URLError.Code = reason.hasPrefix("the redirect to") ? .badURL : .httpTooManyRedirects
            refusal = TransportError(
                URLError(code, userInfo: [NSLocalizedDescriptionKey: reason, NSURLErrorFailingURLErrorKey: url]),
                url: url)
            eventLoop.execute { task.cancel() }
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        silence.heard(at: silenceScheduler.now)
        // A redirect's body, or one that ends the transfer: dropped.
        guard nextRequest == nil, refusal == nil else { return eventLoop.makeSucceededVoidFuture() }
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
        silence.paused()  // the transfer holds the server back now: its silence is not the server's
        return promise.futureResult
    }

    /// Lets AsyncHTTPClient read on, once the backlog is below its limit and the throttle's wait is over.
    private func releaseDemand() {
        guard let demand, throttled == nil, backlog.bytes < Self.backlogLimit else { return }
        self.demand = nil
        if !ended {
            silence.resumed(at: silenceScheduler.now)
            armSilence()
        }
        demand.succeed()
    }

    /// Arms the check of `silence` at its deadline, unless one is armed or the transfer does not read.
    private func armSilence() {
        guard silenceTimer == nil, !ended, let deadline = silence.deadline else { return }
        silenceTimer = silenceScheduler.schedule(after: deadline - silenceScheduler.now) { [self] in
            eventLoop.execute { self.silenceTimerFired() }
        }
    }

    /// The check of `silence`: ends the transfer as `readTimeout` when the server was silent for
    /// the limit while it read; else checks again at the new deadline (or when it reads again).
    private func silenceTimerFired() {
        silenceTimer = nil
        guard !ended else { return }
        guard silence.hasExpired(at: silenceScheduler.now) else { return armSilence() }
        refusal = HTTPClientError.readTimeout
        let running = slot.withLock { slot -> HTTPClient.Task<Void>? in
            if case .running(let task) = slot { return task }
            return nil
        }
        running?.cancel()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        // The task's future fails right after: `failed` ends the transfer there.
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        if followRedirect() { return }
        end(refusal)
    }

    /// Sends the redirect the last response asked for, if any; false when there is none.
    private func followRedirect() -> Bool {
        guard let next = nextRequest, !ended else { return false }
        nextRequest = nil
        refusal = nil
        request = next
        sawHead = false
        waitedForBusyConnections = false
        silence.paused()
        if !send() { end(HTTPClientError.cancelled) }
        return true
    }

    /// The task failed: sent again when it only waited for a connection, else the end.
    ///
    /// AsyncHTTPClient gives a request one deadline (the connect timeout) for waiting in its pool
    /// and for the connection it then opens. So a connect timeout right after a wait for busy
    /// connections is sent again too: the connection it waited for was opened late in its time.
    /// A second one in a row is the host's.
    private func failed(_ error: any Error) {
        if followRedirect() { return }
        if let refusal { return end(refusal) }
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
        silenceTimer?.cancel()
        silenceTimer = nil
        // Nothing more is read: the throttle's timer goes now (a promise left waiting is released).
        if let throttled, let throttle {
            self.throttled = nil
            throttle.cancel(throttled)
            releaseDemand()
        }
        // Named here, where the URL last asked for (a redirect's) is known: a refusal names its host.
        submit(.end(error.map { Self.transportError($0, url: url, asked: request.url) }))
    }

    // MARK: The handler's work, on the thread pool

    /// Runs `work` now, when it may run on the event loop and nothing waits; else queues it for
    /// the thread pool (on the event loop).
    private func submit(_ work: Work, bytes: Int = 0) {
        if worksInline, backlog.isIdle {
            // One callback at a time: one that comes from inside another waits for it.
            guard !performsInline else { return eventLoop.execute { self.submit(work, bytes: bytes) } }
            let start = DispatchTime.now().uptimeNanoseconds
            performsInline = true
            perform(work)
            performsInline = false
            if DispatchTime.now().uptimeNanoseconds - start > Self.slowWork { worksInline = false }
            return
        }
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
        for work in handed.work { perform(work) }
        eventLoop.execute { [self] in
            handed.work = []
            if let next = backlog.batchFinished() { run(next) }
            releaseDemand()
        }
    }

    /// Tells the handler of `work`.
    private func perform(_ work: Work) {
        switch work {
        case .head(let head, let task): receive(head, of: task)
        case .body(let buffer, let task): receive(buffer, of: task)
        case .end(let error):
            handler.onComplete(response, handler.failure ?? error.map { Self.transportError($0, url: url) })
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
    /// give, so that `TransientFailure` judges both alike; `asked` is the URL last asked for (a
    /// redirect's; nil: `url`), whose host a refused connection names. A certificate that fails verification is
    /// `serverCertificateUntrusted` (not transient: trying again cannot help).
    static func transportError(_ error: any Error, url: URL, asked: URL? = nil) -> any Error {
        if let ready = error as? TransportError { return ready }
        let asked = asked ?? url
        var reason = String(describing: error)
        let code: URLError.Code
        if isRefusal(error) {
            let port = asked.port.map { ":\($0)" } ?? ""
            return transportError(
                .cannotConnectToHost, "the connection to \(asked.host ?? "the host")\(port) was refused", url: url)
        }
        if let ssl = error as? NIOSSLExtraError, ssl == .failedToValidateHostname {
            return transportError(
                .serverCertificateUntrusted,
                "the server's certificate is not valid for \(asked.host ?? "the host") (its names do not match)",
                url: url)
        }
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
        return transportError(code, reason, url: url)
    }

    /// A `TransportError` for `url` whose `URLError` has `code` and reads `reason`.
    private static func transportError(_ code: URLError.Code, _ reason: String, url: URL) -> TransportError {
        TransportError(
            URLError(code, userInfo: [NSLocalizedDescriptionKey: reason, NSURLErrorFailingURLErrorKey: url]), url: url)
    }

    /// Whether `error` is a refused connection (`ECONNREFUSED`): SwiftNIO's own, or every attempt
    /// of its Happy Eyeballs connect.
    private static func isRefusal(_ error: any Error) -> Bool {
        if let io = error as? IOError { return io.errnoCode == ECONNREFUSED }
        if let connection = error as? NIOConnectionError {
            return !connection.connectionErrors.isEmpty
                && connection.connectionErrors.allSatisfy { isRefusal($0.error) }
        }
        return false
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
