import Foundation
import JobKit
import Logging
import Tracing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What sends a download's requests: the seam between a download (and the manager) and the network.
/// `DownloadTransport`'s two clients implement it; tests give the manager one of their own
/// (`DownloadManager.Configuration.httpTransport`) to script answers without sockets. It is
/// `package`: the package's tests and tools may implement it; it is not public API.
///
/// **Threading.** `start` is called on any thread. The handler's callbacks must come one at a time,
/// each after the one before returned (a serial queue, say), never on the caller's stack; the
/// transport ends the request (its `onComplete`) once, and stops calling the handler when the run
/// of `controller` is cancelled.
package protocol HTTPTransport: Sendable {
    /// Sends `request` (a GET) and feeds its response to `handler`; cancelled with the run of
    /// `controller`. `context`, `logger` and `throttle` are a traced run's context, the manager's
    /// logger and its speed limit (a transport may ignore them).
    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?)
}

extension DownloadTransport: HTTPTransport {}

/// The manager's own AsyncHTTPClient, whose transfers fail as timed out once the server was silent
/// for `silenceLimit` (`DownloadManager.Configuration.readSilenceLimit`).
struct ManagedClientTransport: HTTPTransport {
    let client: DownloadTransport
    let silenceLimit: Duration

    func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?
    ) {
        client.start(
            request, handler: handler, for: controller, context: context, logger: logger, throttle: throttle,
            silenceLimit: silenceLimit)
    }
}
