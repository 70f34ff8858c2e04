import AsyncHTTPClient
import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a download's bytes come through.
///
/// - `asyncHTTPClient`: SwiftNIO's AsyncHTTPClient. Bodies arrive as the server sends them and are
///   written to the `.part` on SwiftNIO's blocking-I/O thread pool (`NIOThreadPool.singleton`),
///   never on an event loop, in order; once 1 MiB of a body waits for the disk, the next chunk is
///   read only when some is written (memory stays bounded however slow the disk). On Linux it
///   moves 200 files of 1 MiB 3 to 4 times faster than FoundationNetworking (BENCHMARKS.md). The
///   client's own configuration applies: redirects (followed, by default), proxies, TLS, timeouts,
///   connections per host — a download waiting for one of its connections waits (AsyncHTTPClient's
///   `getConnectionFromPoolTimeout` queues it again), it never fails for waiting. Whoever made the
///   client shuts it down, after the downloads ended.
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
    func start(_ request: URLRequest, handler: TransferHandler, for controller: Job<URL>.Controller) {
        switch self {
        case .urlSession(let client):
            client.start(client.session.dataTask(with: request), handler: handler, for: controller)
        case .asyncHTTPClient(let client):
            HTTPClientTransfer.start(request, on: client, handler: handler, for: controller)
        }
    }
}

/// The configuration of the AsyncHTTPClient a `DownloadManager` makes for itself: no limit of its
/// own on connections per host (the manager's `maxConcurrent`, as `setMaxConcurrent` changes it,
/// and `maxPerHost` bound them: a second, fixed limit would only make downloads wait in the
/// client's pool, and fail there), the body as sent (no decompression), redirects followed, and a
/// transfer that stays silent for a minute fails as timed out (and is retried as transient).
/// AsyncHTTPClient keeps trying a refused connection until the connect timeout (its issue 743), so
/// that is its default 10 s.
enum DownloadHTTPClient {
    static func make() -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .follow(max: 10, allowCycles: false),
            timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = .max
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
