import AsyncHTTPClient
import Foundation
import JobKit
import Logging
import Tracing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a download's bytes come through.
///
/// **Threading.** A download's body is written on the transport's own thread, one callback at a
/// time: for `asyncHTTPClient`, on the connection's event loop while the disk keeps up, for a
/// download from its first byte that never flushes (without `.system` durability), else on a
/// blocking-I/O thread pool of
/// JobKit's own (a SwiftNIO `NIOThreadPool` of at least four threads); for `urlSession`, on the
/// client's serial delegate queue. The download's run completes on the queue it was performed on.
///
/// - `asyncHTTPClient`: SwiftNIO's AsyncHTTPClient. Bodies arrive as the server sends them and are
///   written to the `.part` in order; once 1 MiB of a body waits for the disk, the next chunk is
///   read only when some is written (memory stays bounded however slow the disk). On Linux it is
///   much faster than FoundationNetworking (measured in BENCHMARKS.md). The client's own
///   configuration applies: proxies, TLS, timeouts, connections per host — a download waiting for
///   one of its connections waits (AsyncHTTPClient's `getConnectionFromPoolTimeout` queues it
///   again), it never fails for waiting. Redirects: a client made with `redirectConfiguration:
///   .disallow` (as a `DownloadManager`'s own is) leaves them to the download, which follows each
///   after `DownloadURLCheck` and keeps credentials to their origin; a client that follows them
///   itself does so unchecked (SwiftNIO traps on a `Location` with a port beyond 65535). Whoever
///   made the client shuts it down, after the downloads ended.
/// - `urlSession`: a `TransferClient` (URLSession): its configuration, headers, credentials and
///   challenge delegate apply.
///
/// ```swift
/// let http = HTTPClient(eventLoopGroupProvider: .singleton)
/// let file = try await Job<URL>.download(from: url, to: destination, transport: .asyncHTTPClient(http)).value
/// try await http.shutdown()
/// ```
public enum DownloadTransport: Sendable {
    /// Through an AsyncHTTPClient `HTTPClient`.
    case asyncHTTPClient(HTTPClient)
    /// Through a `TransferClient`'s URLSession.
    case urlSession(TransferClient)

    /// Sends `request` (a GET) and feeds its response to `handler`; cancelled with the run of
    /// `controller`. The handler's callbacks come one at a time, on the transport's own thread.
    /// In a traced run's `context`, the request is a span of its own under the run's (`RequestSpan`);
    /// AsyncHTTPClient logs the request to `logger`, and reads the body as fast as `throttle`
    /// allows (a URLSession reads it as fast as it comes: see `DownloadManager.Configuration.maxBytesPerSecond`).
    /// A URL that `DownloadURLCheck` refuses (not http(s), no host, a port beyond 65535) ends the
    /// transfer at once, before any transport sees it: `handler` hears a `TransportError` (`badURL`).
    package func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext? = nil, logger: Logger? = nil, throttle: Throttle? = nil
    ) {
        start(
            request, handler: handler, for: controller, context: context, logger: logger, throttle: throttle,
            silenceLimit: HTTPClientTransfer.defaultSilenceLimit)
    }

    /// `start`, with the time the server may stay silent while an AsyncHTTPClient transfer reads
    /// (`silenceLimit`; a URLSession keeps its own timeouts).
    package func start(
        _ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller,
        context: ServiceContext?, logger: Logger?, throttle: Throttle?, silenceLimit: Duration
    ) {
        // The one check of every URL before a transport sees it (SwiftNIO traps on a port beyond 65535).
        if let url = request.url, let problem = DownloadURLCheck.problem(with: url) {
            return handler.onComplete(nil, DownloadURLCheck.transportError(url, problem))
        }
        var request = request
        if let span = RequestSpan.start(&request, in: context) {
            let complete = handler.onComplete
            handler.onComplete = { [unowned handler] response, error in
                span.end(response, error ?? handler.failure)
                complete(response, error)
            }
        }
        switch self {
        case .urlSession(let client):
            client.start(client.session.dataTask(with: request), handler: handler, for: controller)
        case .asyncHTTPClient(let client):
            HTTPClientTransfer.start(
                request, on: client, handler: handler, for: controller, logger: logger, throttle: throttle,
                silenceLimit: silenceLimit)
        }
    }
}
