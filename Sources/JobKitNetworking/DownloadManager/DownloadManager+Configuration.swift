import AsyncHTTPClient
import Dispatch
import Foundation
import JobKit
import Logging
import NIOSSL

extension DownloadManager {
    /// How a manager runs its downloads and reports them.
    public struct Configuration: Sendable {
        /// At most this many downloads run at once (the width); below 1 counts as 1. Default 8.
        public var maxConcurrent: Int
        /// At most this many of them to one host (`host:port`); nil: only `maxConcurrent` limits.
        /// A pending item whose host is full waits, while items of other hosts start. Default nil.
        public var maxPerHost: Int?
        /// How transient failures (dropped connections, timeouts, 408, 429, 5xx) are retried: the
        /// policy of `retryingTransientFailures`. A retry resumes the `.part` where it ends.
        public var retry: RetryPolicy
        /// Ignored: where `onUpdate` runs is chosen where its type can follow the choice — the main
        /// queue with `DownloadManager.init(directory:configuration:onUpdate:)` (a `@MainActor`
        /// handler), or the queue given to `init(directory:configuration:resultQueue:onUpdate:)` (a
        /// `@Sendable` one). See `DownloadManager.resultQueue`.
        @available(
            *, deprecated,
            message: "pass the queue to DownloadManager.init(directory:configuration:resultQueue:onUpdate:)"
        )
        public var resultQueue: DispatchQueue = .main
        /// Progress alone is delivered at most once per interval (state changes at once). Default 100 ms.
        public var progressInterval: Duration
        /// Speeds are averaged over this window. Default 5 s.
        public var speedWindow: Duration
        /// What the downloads go through: `.urlSession(client)` for a `TransferClient`, or
        /// `.asyncHTTPClient(http)` for a client of your own. nil (the default): an AsyncHTTPClient
        /// the manager makes and shuts down when it is released, with as many connections per host
        /// as the manager runs downloads to it (`maxConcurrent`, as `setMaxConcurrent` changes it,
        /// and `maxPerHost`: no download waits for a connection), redirects followed, bodies as
        /// sent, and a transfer silent for 60 s failing as timed out. See `DownloadTransport`.
        public var transport: DownloadTransport?
        /// The TLS configuration of the AsyncHTTPClient the manager makes (no `transport` given):
        /// the certificate authorities it trusts, client certificates, minimum version. nil (the
        /// default): SwiftNIO SSL's client default — the system's trust roots, full verification.
        /// A server whose certificate is not trusted fails its item at once (not retried) with a
        /// `TransportError` naming the URL and the handshake's reason.
        ///
        /// ```swift
        /// var tls = TLSConfiguration.makeClientConfiguration()
        /// tls.additionalTrustRoots = [.file("/etc/my-ca.pem")]    // a private CA, besides the system's
        /// var configuration = DownloadManager.Configuration()
        /// configuration.tlsConfiguration = tls
        /// ```
        public var tlsConfiguration: TLSConfiguration?
        /// Which HTTP versions the AsyncHTTPClient the manager makes (no `transport` given) speaks.
        /// `.automatic` (the default): HTTPS negotiates HTTP/2 when the server offers it (ALPN), as curl
        /// does, else HTTP/1.1; plain HTTP is HTTP/1.1. `.http1Only`: HTTP/1.1 always (curl's
        /// `--http1.1`).
        ///
        /// Over HTTP/2, the downloads to one host share one connection, each a stream of it: `maxPerHost`
        /// and `maxConcurrent` then bound streams, not connections (nginx allows 128 streams on a
        /// connection by default; AsyncHTTPClient opens another connection when the server's limit is
        /// reached), and a server's per-connection limits apply to all of them together.
        public var httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic
        /// The most bytes a second all downloads together read (aria2's
        /// `--max-overall-download-limit`); nil (the default), zero or negative: no limit.
        /// `DownloadManager.setMaxBytesPerSecond(_:)` changes it while downloads run.
        ///
        /// Each download reads its next chunk only once a token bucket (a burst of a tenth of a second's
        /// worth) allows it: the connection is not read meanwhile, so the server is held back by TCP's
        /// own flow control — no thread waits, nothing is buffered. The running downloads share the
        /// limit evenly, a chunk each in turn; one limited lower (`Request.maxBytesPerSecond`) or held
        /// back by its server leaves the rest to the others. HTTP/2 streams sharing one connection
        /// are limited each on its own, the same way.
        ///
        /// Applies through AsyncHTTPClient (the default transport, or `.asyncHTTPClient`). A
        /// `.urlSession` transport reads as fast as the server sends: URLSession gives no way to stop
        /// reading one task's body, so the limits do not apply to it.
        ///
        /// The wait before a chunk is its size over the limit; a chunk is at most 64 KiB (SwiftNIO's
        /// reads). So a limit below about 1.1 KiB/s makes a wait longer than the manager's own
        /// client's read timeout (60 s): the attempt then fails as timed out and is retried, resuming.
        ///
        /// ```swift
        /// var configuration = DownloadManager.Configuration()
        /// configuration.maxBytesPerSecond = 2 << 20   // 2 MiB/s for all downloads together
        /// ```
        public var maxBytesPerSecond: Int64?
        /// A folder under the manager's directory to download into instead, as a relative path
        /// (`"images/nightly"`); nil (the default): the directory itself. Each component follows the
        /// name rule (`checkName`: no `.`, `..` or empty component, no control character, at most 255
        /// bytes), at most 16 of them. The folders are made (0755) when missing and opened one by one
        /// from the directory, never following a symbolic link: one planted under a component's name
        /// fails the manager with `.cannotUseDirectory`, so nothing is written outside the directory.
        /// The journal, `directory` and the items' URLs are the subfolder's.
        public var subfolder: String?
        /// Where the download jobs run, and the journal's background syncs (with `.system`
        /// durability, one at a time); not where updates are delivered (`resultQueue`). Default: a
        /// global queue. A serial queue runs all of it one block at a time, in the order it was queued.
        public var queue: DispatchQueue
        /// What a completed file and the journal survive. `.process` (default): the process being
        /// killed or crashing at any moment — no completed file is lost or fetched again, partial
        /// ones resume — with no `fsync` at all (as curl and aria2c). `.system`: also a power loss
        /// or an operating-system crash — each file is synced before it takes its name and its
        /// folder after, and the journal after each add and before each file takes its name (a few
        /// milliseconds per file); a `.part` is also synced every 16 MiB. After a restart of the
        /// machine a `.part` resumes only what was synced (with `.process`, it starts over). See
        /// `Durability`.
        public var durability: Durability
        /// Whether items the journal holds as pending (or that were running when the last manager
        /// stopped) start when the manager opens. True (the default): they do. False: they come back
        /// `suspended` (the journal keeps them pending, untouched) and start when resumed or added
        /// again with the same URL, name and checksum — `jobkit download` downloads only what its
        /// command names, so an earlier command's leftovers neither run nor hold it up.
        public var startsRestoredItems = true
        /// The manager's clock and timers: retry backoff, `progressInterval`, speeds and time left,
        /// and the manager's own waits (a failed journal write tried again, a journal sync shared by
        /// completions close together). Default `.dispatch`. A `TestScheduler` (from `JobKitTesting`)
        /// moves them by hand; the transport's own timeouts stay on the real clock.
        public var scheduler: any JobScheduler
        /// Where the manager and its transports log: `debug` for each download's start, end and
        /// responses, `warning` for a failed attempt that is retried, `error` for a download that
        /// failed; each with the item's `download.id`, `download.name` and `download.url` (without a
        /// user or password, a signed URL's signature redacted) as metadata. AsyncHTTPClient logs its requests to it too. Default: a
        /// logger that discards everything — the manager prints nothing by itself.
        ///
        /// ```swift
        /// var configuration = DownloadManager.Configuration()
        /// configuration.logger = Logger(label: "downloads")
        /// ```
        public var logger = Logger(label: "jobkit.downloads", factory: { _ in SwiftLogNoOpLogHandler() })
        /// What traces each download: its run (named after the item) and, for retried downloads,
        /// each attempt's run under it. With a `SpanTracer`, each HTTP request is a span under its
        /// attempt's; with a `ChromeTraceWriter`, the downloads are rows of a Chrome trace. Default:
        /// none (untraced runs pay nothing for tracing).
        public var tracers: [any JobTracer] = []
        /// Asked for a fresh URL when an item's server refuses it with 401, 403 or 410 — a signed
        /// URL (S3, a CDN) that expired — before the item fails. Called with the item (its current
        /// URL, state `running`) and the status, on no particular thread, once per refusal, never
        /// with a lock of the manager held; the manager keeps the closure for its lifetime.
        ///
        /// A URL (http or https) becomes the item's (recorded in the journal, as `replaceURL` does)
        /// and the item is queued again: its `.part` resumes from the new URL when the server proves
        /// with the validator (ETag or Last-Modified) that it serves the same bytes, and starts over
        /// when it does not. nil fails the item as it would have failed. A refused answer to a
        /// refreshed URL, before any byte of it arrived, fails the item without asking again. While
        /// the closure runs the item stays `running`, holding its slot; suspending, cancelling or
        /// removing it, or `replaceURL`, meanwhile takes effect at once (a new URL starts at once)
        /// and drops the answer, and so does closing the manager. Then the closure's task is
        /// cancelled: a closure that honours cancellation lets go of the manager at once. Default
        /// nil: a refusal fails the item.
        ///
        /// ```swift
        /// configuration.urlRefresher = { item, status in
        ///     try? await api.signedURL(for: item.name)   // nil: the item fails with the status
        /// }
        /// ```
        public var urlRefresher: (@Sendable (_ item: Item, _ status: Int) async -> URL?)?
        /// What sends the requests, when not `transport`: a test's scripted transport.
        package var httpTransport: (any HTTPTransport)?
        /// What the manager's files live on: its directory, journal, `.part`s and their metadata,
        /// finished files. Default: the real one (`POSIXFileSystem`); a test's in memory.
        package var fileSystem: any DownloadFileSystem = POSIXFileSystem()
        /// How long the server may stay silent while a download of the manager's own client reads
        /// (time spent waiting on a speed limit does not count): then the attempt fails as timed
        /// out. Default 60 seconds; tests that hold a server's answer on purpose make it longer.
        package var readSilenceLimit: Duration = HTTPClientTransfer.defaultSilenceLimit
        /// Where tests act in the middle of the manager's work.
        var testHooks = TestHooks()

        /// `directory` with `subfolder` under it, standardized.
        func directory(under directory: URL) -> URL {
            let root = directory.standardizedFileURL
            return subfolder.map { root.appendingPathComponent($0, isDirectory: true) } ?? root
        }

        /// A configuration; every parameter has the default its property describes.
        public init(
            maxConcurrent: Int = 8, maxPerHost: Int? = nil, retry: RetryPolicy = RetryPolicy(),
            progressInterval: Duration = .milliseconds(100), speedWindow: Duration = .seconds(5),
            queue: DispatchQueue = .global(), durability: Durability = .process, transport: DownloadTransport? = nil,
            scheduler: any JobScheduler = .dispatch
        ) {
            self.scheduler = scheduler
            self.transport = transport
            self.maxConcurrent = maxConcurrent
            self.maxPerHost = maxPerHost
            self.retry = retry
            self.progressInterval = progressInterval
            self.speedWindow = speedWindow
            self.queue = queue
            self.durability = durability
        }

        /// A configuration with a result queue, which is ignored: pass the queue to
        /// `DownloadManager.init(directory:configuration:resultQueue:onUpdate:)`.
        @available(
            *, deprecated,
            message: "pass the queue to DownloadManager.init(directory:configuration:resultQueue:onUpdate:)"
        )
        public init(
            maxConcurrent: Int = 8, maxPerHost: Int? = nil, retry: RetryPolicy = RetryPolicy(),
            resultQueue: DispatchQueue, progressInterval: Duration = .milliseconds(100),
            speedWindow: Duration = .seconds(5), queue: DispatchQueue = .global(),
            durability: Durability = .process, transport: DownloadTransport? = nil,
            scheduler: any JobScheduler = .dispatch
        ) {
            self.init(
                maxConcurrent: maxConcurrent, maxPerHost: maxPerHost, retry: retry, progressInterval: progressInterval,
                speedWindow: speedWindow, queue: queue, durability: durability, transport: transport,
                scheduler: scheduler)
            self.resultQueue = resultQueue
        }
    }
}
