import Dispatch
import Foundation
import JobKit
import Logging

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
        /// Where `onUpdate` runs. Default: the main queue.
        public var resultQueue: DispatchQueue
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
        /// Where the download jobs run (never the result queue). Default: a global queue.
        public var queue: DispatchQueue
        /// What a completed file and the journal survive. `.process` (default): the process being
        /// killed or crashing at any moment — no completed file is lost or fetched again, partial
        /// ones resume — with no `fsync` at all (as curl and aria2c). `.system`: also a power loss
        /// or an operating-system crash — each file is synced before it takes its name and its
        /// folder after, and the journal after each add and before each file takes its name (a few
        /// milliseconds per file). See `Durability`.
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
        /// user or password) as metadata. AsyncHTTPClient logs its requests to it too. Default: a
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
        /// removing it (or closing the manager) meanwhile drops the answer. Default nil: a refusal
        /// fails the item.
        ///
        /// ```swift
        /// configuration.urlRefresher = { item, status in
        ///     try? await api.signedURL(for: item.name)   // nil: the item fails with the status
        /// }
        /// ```
        public var urlRefresher: (@Sendable (_ item: Item, _ status: Int) async -> URL?)?
        /// Where tests act in the middle of the manager's work.
        var testHooks = TestHooks()

        /// A configuration; every parameter has the default its property describes.
        public init(
            maxConcurrent: Int = 8, maxPerHost: Int? = nil, retry: RetryPolicy = RetryPolicy(),
            resultQueue: DispatchQueue = .main, progressInterval: Duration = .milliseconds(100),
            speedWindow: Duration = .seconds(5), queue: DispatchQueue = .global(),
            durability: Durability = .process, transport: DownloadTransport? = nil,
            scheduler: any JobScheduler = .dispatch
        ) {
            self.scheduler = scheduler
            self.transport = transport
            self.maxConcurrent = maxConcurrent
            self.maxPerHost = maxPerHost
            self.retry = retry
            self.resultQueue = resultQueue
            self.progressInterval = progressInterval
            self.speedWindow = speedWindow
            self.queue = queue
            self.durability = durability
        }
    }
}
