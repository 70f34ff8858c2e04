import AsyncHTTPClient
import NIOSSL

/// The configuration of the AsyncHTTPClient a `DownloadManager` makes for itself: no limit of its
/// own on connections per host (the manager's `maxConcurrent`, as `setMaxConcurrent` changes it,
/// and `maxPerHost` bound them: a second, fixed limit would only make downloads wait in the
/// client's pool, and fail there), the body as sent (no decompression), and no read timeout of the
/// client's: it would count a speed limit's waits as the server's silence. `HTTPClientTransfer`
/// fails a transfer whose server stays silent for a minute while it reads (`ReadSilence`; retried
/// as transient), and follows redirects itself (`Redirect`), each `Location` checked before it
/// reaches SwiftNIO: the client follows none.
/// No request spans of AsyncHTTPClient's own: a traced download's request is a span JobKit makes
/// under its run's (`RequestSpan`). A connection that fails (refused, a certificate not trusted)
/// fails its requests at once: the client does not try it again until the connect timeout (10 s,
/// for a host that does not answer at all); the manager's retry policy decides. TLS as `tls` says
/// (nil: SwiftNIO SSL's client default), and HTTP/2 negotiated over TLS unless `httpVersion` is
/// `.http1Only`.
enum DownloadHTTPClient {
    static func make(
        tls: TLSConfiguration? = nil, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10)))
        configuration.httpVersion = httpVersion
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = .max
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        // Its request spans would be roots of traces of their own (see `RequestSpan`).
        configuration.tracing.tracer = nil
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
