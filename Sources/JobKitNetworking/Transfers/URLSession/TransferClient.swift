import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one object that owns the URLSession every networking job of an app goes through.
///
/// **Threading.** A client may be used from any thread. Its delegate callbacks (response, body
/// bytes, completion) run on its own serial delegate queue; the handlers of jobs (`map`, `then`,
/// `perform`'s handler) never do: a job completes on the queue it was performed on.
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
///     Job<URL>.download(from: url, to: folder.appending(path: url.lastPathComponent), transport: .urlSession(api))
/// }
/// let files = try await Job<[URL]>.collect(downloads, maxConcurrent: 8).value
/// ```
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
