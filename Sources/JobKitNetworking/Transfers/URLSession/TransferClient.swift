import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers the authentication challenges of a `TransferClient`'s requests (HTTP auth, server trust,
/// certificate pinning).
///
/// Called on the client's delegate queue, once per challenge; `completionHandler` must be called
/// exactly once, from any thread. Answer quickly, and never call a `URLSessionTask`'s `resume()`,
/// `suspend()` or `cancel()` from the callback itself: every transfer of the client waits for this
/// queue. The client keeps its delegate for its own lifetime.
public protocol TransferClientDelegate: AnyObject, Sendable {
    /// Decides how to answer `challenge`, met while loading `url` (nil for a session-wide challenge).
    func transferClient(
        _ client: TransferClient, didReceive challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
}

/// The one object that owns the URLSession every networking job of an app goes through.
///
/// Create one per configuration (headers, timeouts, proxies, credentials) and pass it to the jobs,
/// or use `TransferClient.shared`. It keeps its configuration and its delegate-backed session for its
/// whole lifetime, and invalidates the session when it is released (tasks in flight finish first;
/// every job keeps its client alive while it runs). Nothing is cached or shared between clients, so
/// one client's headers can never reach another's requests.
///
/// ```swift
/// let configuration = URLSessionConfiguration.default
/// configuration.httpAdditionalHeaders = ["Authorization": "Bearer \(token)"]
/// let api = TransferClient(configuration: configuration, maxConnectionsPerHost: 8)
/// let downloads = urls.map { url in
///     Job<URL>.download(from: url, to: folder.appending(path: url.lastPathComponent), client: api)
/// }
/// let files = try await Job<[URL]>.collect(downloads, maxConcurrent: 8).value
/// ```
///
/// Delegate callbacks (response, body bytes, completion) run on the client's own serial delegate
/// queue; the handlers of jobs (`map`, `then`, `perform`'s handler) never do: a job completes on the
/// queue it was performed on.
public final class TransferClient: Sendable {
    /// A client with the default configuration and at most 8 connections per host.
    public static let shared = TransferClient()

    /// The most connections the client opens to one host (`httpMaximumConnectionsPerHost`).
    public let maxConnectionsPerHost: Int
    let session: URLSession
    let router: TransferRouter

    /// A client whose requests use `configuration` (copied: later changes to it have no effect).
    ///
    /// - Parameters:
    ///   - configuration: headers, timeouts, caches and proxies for every request; copied.
    ///   - maxConnectionsPerHost: the width of the transfers you run through it (a group's
    ///     `maxConcurrent`): FoundationNetworking's own default is 6. Clamped to 1...1024.
    ///   - delegate: answers authentication challenges; without one, the system's default handling
    ///     applies. Kept for the client's lifetime.
    public init(
        configuration: URLSessionConfiguration = .default, maxConnectionsPerHost: Int = 8,
        delegate: (any TransferClientDelegate)? = nil
    ) {
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        self.maxConnectionsPerHost = min(max(maxConnectionsPerHost, 1), 1024)
        configuration.httpMaximumConnectionsPerHost = self.maxConnectionsPerHost
        let router = TransferRouter(delegate: delegate)
        let queue = DelegateQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "JobKitNetworking.TransferClient"
        self.router = router
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
        router.client = WeakClient(self)
    }

    /// A copy of the configuration the client's requests use.
    public var configuration: URLSessionConfiguration { session.configuration }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Starts `task` with `handler`, and cancels it with the run of `controller`.
    func start<Value>(_ task: URLSessionTask, handler: TransferHandler, for controller: Job<Value>.Controller) {
        let transfer = RunningTransfer(queue: router.taskQueue)
        handler.transfer = transfer
        router.register(handler, for: task)
        controller.onCancel { transfer.cancel() }
        let router = router
        let box = UncheckedTask(task)
        transfer.resume(task) { router.unregister(box.task) }
    }
}

#if canImport(FoundationNetworking)
    /// The client's delegate queue: serial, with at most `limit` callbacks waiting.
    ///
    /// FoundationNetworking hands every chunk of every body to the delegate queue as an operation
    /// and never slows down: a delegate that writes slower than loopback delivers piles the bodies
    /// up in memory (8 × 100 MiB peaked at 206 MB). Its `suspend()` cannot help (it restarts the
    /// transfer). So adding an operation waits while `limit` are queued: the wait is on the
    /// session's own transfer thread, which stops reading sockets until the delegate catches up —
    /// TCP flow control does the rest. This is the one blocking wait in JobKit, and it never blocks
    /// a caller's thread or this queue: nothing on this queue calls a task's `resume()` or
    /// `cancel()` synchronously (they wait for the transfer thread), and an operation added from
    /// this queue itself never waits.
    // Safety: the permits are a semaphore; OperationQueue is itself thread-safe.
    final class DelegateQueue: OperationQueue, @unchecked Sendable {
        /// The most callbacks waiting at once: with libcurl's 16 KiB to 512 KiB chunks, a few MiB.
        static let limit = 256
        private let permits = DispatchSemaphore(value: DelegateQueue.limit)
        /// The thread the callbacks run on: the queue's own, never one of the shared global queues.
        private let dispatchQueue = DispatchQueue(label: "JobKitNetworking.TransferClient.delegate")

        override init() {
            super.init()
            underlyingQueue = dispatchQueue
        }

        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            if OperationQueue.current === self { return super.addOperation(block) }
            permits.wait()
            let permits = permits
            super.addOperation {
                block()
                permits.signal()
            }
        }
    }
#else
    /// The client's delegate queue (Apple platforms apply their own backpressure).
    typealias DelegateQueue = OperationQueue
#endif

/// A weak reference to the client, for the router that its session retains.
// Safety: copied whole behind the router's lock; TransferClient is Sendable and weak loads are atomic.
struct WeakClient: @unchecked Sendable {
    weak var client: TransferClient?

    init(_ client: TransferClient?) { self.client = client }
}

/// One task's start and cancellation, in either order.
///
/// The start runs on the client's task queue: FoundationNetworking's `resume()` waits for the
/// session's transfer thread, which may be waiting for the delegate queue (see `DelegateQueue`), and
/// a job body waiting there would hold a thread of the shared global pool. A task whose run is
/// cancelled before it started is never started (nor cancelled: FoundationNetworking can trap on a
/// cancelled task that never ran).
final class RunningTransfer: Sendable {
    private enum State {
        case notStarted
        case starting
        case running(UncheckedTask)
        /// The session reported the end of the task: cancelling it now could only race that end.
        case finished
        case cancelled
    }

    private let state = LockedBox<State>.make(.notStarted)
    private let queue: DispatchQueue

    init(queue: DispatchQueue) { self.queue = queue }

    /// Resumes `task` on the task queue unless the run is cancelled first; `abandon` runs instead
    /// when it never starts.
    func resume(_ task: URLSessionTask, abandon: @escaping @Sendable () -> Void) {
        let box = UncheckedTask(task)
        let starts = state.withLock { state -> Bool in
            guard case .notStarted = state else { return false }
            state = .starting
            return true
        }
        guard starts else { return abandon() }
        queue.async { [self] in
            let stillWanted = state.withLock { state -> Bool in
                if case .cancelled = state { return false }
                return true
            }
            guard stillWanted else { return abandon() }
            box.task.resume()
            let cancelledMeanwhile = state.withLock { state -> Bool in
                if case .cancelled = state { return true }
                if case .starting = state { state = .running(box) }
                return false
            }
            if cancelledMeanwhile { box.task.cancel() }
        }
    }

    /// Cancels the running task; one not started yet never starts; nothing once the task has ended.
    ///
    /// FoundationNetworking (swift-corelibs-foundation, Swift 6.3) traps when `cancel()` races the
    /// end of a task ("Trying to access a behaviour for a task that in not in the registry"): it
    /// checks the task's state, then reports the cancellation later on its queue, after the task may
    /// have left its registry. Not cancelling a task whose end was already reported narrows that
    /// window to the moment between the last byte and the report; it cannot close it.
    func cancel() {
        let running = state.withLock { state -> UncheckedTask? in
            switch state {
            case .finished, .cancelled:
                return nil
            case .running(let task):
                state = .cancelled
                return task
            case .notStarted, .starting:
                state = .cancelled
                return nil
            }
        }
        // At once, not on `queue`: a late cancel is likelier to meet the end of the task. It may
        // wait a moment for the transfer thread (see `DelegateQueue`); nothing calls it on the
        // delegate queue.
        running?.task.cancel()
    }

    /// Records that the session reported the end of the task.
    func finish() {
        state.withLock { state in
            if case .running = state { state = .finished }
        }
    }
}

// Safety: URLSessionTask is thread-safe; it is only resumed and cancelled through this box.
struct UncheckedTask: @unchecked Sendable {
    let task: URLSessionTask

    init(_ task: URLSessionTask) { self.task = task }
}

/// What one transfer does with its session's delegate callbacks. Called on the client's delegate
/// queue (serial) — or, through AsyncHTTPClient, on SwiftNIO's blocking pool, each callback after
/// the one before returned (`HTTPClientTransfer`) — so a handler's own state needs no lock.
// Safety: every callback arrives on the owning client's serial delegate queue, one at a time, or
// from an `HTTPClientTransfer`, which submits each to the pool once the one before has run.
final class TransferHandler: @unchecked Sendable {
    /// Decides what to do with the response: true to receive its body, false to end the task (it
    /// then completes with `URLError(.cancelled)`).
    var onResponse: (HTTPURLResponse) throws -> Bool = { _ in true }
    var onData: (Data) throws -> Void = { _ in }
    /// Takes the body's bytes instead of `onData` where the transport has them in a buffer of its
    /// own (AsyncHTTPClient): no copy into a `Data`.
    var onBytes: ((UnsafeRawBufferPointer) throws -> Void)?
    var onSent: (_ sent: Int64, _ expected: Int64) -> Void = { _, _ in }
    var onComplete: (_ response: URLResponse?, _ error: (any Error)?) -> Void = { _, _ in }
    /// A failure raised by `onResponse` or `onData` (a file that cannot be written, say).
    var failure: (any Error)?
    /// The task's start and cancellation; set before the task starts.
    var transfer: RunningTransfer?
    /// The body length the response announced (-1: unknown), and the bytes received so far.
    var expected: Int64 = -1
    var received: Int64 = 0
    /// The rest of the body is dropped as it arrives.
    var discardsBody = false
}

/// Routes the session's delegate callbacks to the handler of each task.
final class TransferRouter: NSObject, URLSessionDataDelegate, Sendable {
    /// Where tasks are resumed and cancelled (see `RunningTransfer`): serial, with its own thread.
    let taskQueue = DispatchQueue(label: "JobKitNetworking.TransferClient.tasks")
    private let handlers = LockedBox<[Int: TransferHandler]>.make([:])
    private let delegate: (any TransferClientDelegate)?
    private let clientBox = LockedBox<WeakClient>.make(WeakClient(nil))

    init(delegate: (any TransferClientDelegate)?) {
        self.delegate = delegate
    }

    var client: WeakClient {
        get { clientBox.withLock { $0 } }
        set { clientBox.withLock { $0 = newValue } }
    }

    func register(_ handler: TransferHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = handler }
    }

    /// Forgets the handler of a task that never started.
    func unregister(_ task: URLSessionTask) {
        _ = handlers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func handler(for task: URLSessionTask) -> TransferHandler? {
        handlers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        var receives = true
        let handler = handler(for: dataTask)
        if let handler, let http = response as? HTTPURLResponse {
            handler.expected = http.expectedContentLength
            do {
                receives = try handler.onResponse(http)
            } catch {
                handler.failure = error
                receives = false
            }
        }
        // Never `.cancel` here: FoundationNetworking traps on it (its transfer is not "failed" yet).
        // Allow, then drop or cancel the body.
        completionHandler(.allow)
        if !receives, let handler { dropBody(of: dataTask, handler) }
    }

    /// Stops using the rest of a body. A short rest is read and dropped: cancelling a task that is
    /// about to end can trap in FoundationNetworking (see `RunningTransfer.cancel`). A long one is
    /// cancelled, from another thread: `cancel()` waits for the session's transfer thread, which may
    /// itself be waiting for this queue (see `DelegateQueue`).
    private func dropBody(of task: URLSessionTask, _ handler: TransferHandler) {
        handler.discardsBody = true
        guard handler.expected < 0 || handler.expected - handler.received > 1 << 20 else { return }
        let box = UncheckedTask(task)
        taskQueue.async { box.task.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let handler = handler(for: dataTask), !handler.discardsBody else { return }
        handler.received += Int64(data.count)
        do { try handler.onData(data) } catch {
            handler.failure = error
            dropBody(of: dataTask, handler)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        handler(for: task)?.onSent(totalBytesSent, totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let handler = handlers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        handler.transfer?.finish()
        handler.onComplete(task.response, handler.failure ?? error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        answer(challenge, loading: task.currentRequest?.url, completionHandler: completionHandler)
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        answer(challenge, loading: nil, completionHandler: completionHandler)
    }

    private func answer(
        _ challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // FoundationNetworking suspends and resumes the task inside the completion handler (each a
        // wait for the transfer thread): never call it on this queue (see `DelegateQueue`).
        let reply = UncheckedReply(completionHandler)
        let queue = taskQueue
        guard let delegate, let client = client.client else {
            return queue.async { reply.call(.performDefaultHandling, nil) }
        }
        let credential = UncheckedCredential()
        delegate.transferClient(client, didReceive: challenge, loading: url) { disposition, answer in
            credential.value = answer
            queue.async { reply.call(disposition, credential.value) }
        }
    }
}

/// A credential on its way to the session.
// Safety: written once, before the block that reads it is queued; URLCredential is immutable.
final class UncheckedCredential: @unchecked Sendable {
    var value: URLCredential?
}

// Safety: the session's completion handler may be called from any thread, once; it is only called.
struct UncheckedReply: @unchecked Sendable {
    let call: (URLSession.AuthChallengeDisposition, URLCredential?) -> Void

    init(_ call: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) { self.call = call }
}

extension Job.Controller {
    /// Completes the run on its own queue, never on the client's delegate queue: `map`, `then` and
    /// the run's handlers must not hold up other transfers.
    func completeOnQueue(with result: Result<Value, any Error>) {
        queue.async { complete(with: result) }
    }
}
