import AsyncHTTPClient
import NIOSSL

/// The configuration of the AsyncHTTPClient a `DownloadManager` makes for itself: no limit of its
/// own on connections per host (the manager's `maxConcurrent`, as `setMaxConcurrent` changes it,
/// and `maxPerHost` bound them: a second, fixed limit would only make downloads wait in the
/// client's pool, and fail there), the body as sent (no decompression), redirects followed, and a
/// transfer that stays silent for a minute fails as timed out (and is retried as transient).
/// No request spans of AsyncHTTPClient's own: a traced download's request is a span JobKit makes
/// under its run's (`RequestSpan`). AsyncHTTPClient keeps trying a refused connection until the connect timeout (its issue 743), so
/// that is its default 10 s. TLS as `tls` says (nil: SwiftNIO SSL's client default), and HTTP/2
/// negotiated over TLS unless `httpVersion` is `.http1Only`.
enum DownloadHTTPClient {
    static func make(
        tls: TLSConfiguration? = nil, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .follow(max: 10, allowCycles: false),
            timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.httpVersion = httpVersion
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = .max
        configuration.decompression = .disabled
        // Its request spans would be roots of traces of their own (see `RequestSpan`).
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
