import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The HTTP server the demos and tests talk to: the demo's backends on a loopback address.
///
/// **Threading.** `start` and `stop` may be called from any task; requests are served on SwiftNIO's event
/// loops, many at once.
///
/// - `GET /files/...`: files under `root/files`, with RFC 9110 ranges, `ETag`, `Last-Modified`, `If-Range`;
/// - `GET /downloads/{name}?chunk-ms=N`: uploaded media, streamed slowly (for progress);
/// - `PUT /media/{name}`, `POST /media`: uploads streamed to disk under `root/media`;
/// - `POST /posts`, `GET /posts`, `GET /posts/{id}`: posts appended to `root/posts.jsonl`, so a restart (or `kill -9`) loses
///   no acknowledged post; a `POST /posts` with an `Idempotency-Key` the server has seen gets that key's post
///   again instead of a new one (the keys of the latest 10,000 keyed posts are remembered);
/// - `GET /products/{id}` and `GET /feed` (the result queue and feed scenarios);
/// - fault injection for every route (`FaultPlan`, `FaultController`).
///
/// Every answer that is not 2xx has the body `{"error": "…"}`: 404 for an unknown path, 405 with `Allow`
/// for a known path and another method. No request can stop the process.
///
/// ```swift
/// let server = try await LoopbackServer.start(.init(root: directory))   // port 0: an ephemeral port
/// defer { Task { await server.stop() } }
/// let url = server.baseURL.appending(path: "feed")
/// ```
public final class LoopbackServer: Sendable {
    /// What `start(_:)` serves, where, and with which limits and faults.
    public struct Configuration: Sendable {
        /// Where files, media and posts live; created if missing.
        public var root: URL
        /// Always a loopback address.
        public var host: String
        /// 0 picks a free ephemeral port.
        public var port: Int
        /// Larger uploads are refused with 413, as soon as the limit is passed (the body is streamed to disk).
        public var maxUploadBytes: Int
        /// Larger `POST /posts` bodies are refused with 413.
        public var maxPostBytes: Int
        /// Faults injected into every route from the start; change them later through `faults`.
        public var faults: FaultPlan
        /// SIGINT and SIGTERM stop the server gracefully (for `jobkit serve`); the process's own handling
        /// of those signals is replaced while the server runs.
        public var stopsOnSignals: Bool
        /// A file that gets one line per request — `GET /files/a.bin range=bytes=100- status=206` — appended
        /// (created if missing); nil for none. Tests count requests and ranges with it.
        public var accessLog: URL?

        /// A configuration: only `root` is required; the defaults listen on an ephemeral loopback port,
        /// accept uploads up to 64 MiB and post bodies up to 64 KiB, inject no faults, leave signals alone and
        /// keep no access log.
        public init(
            root: URL, host: String = "127.0.0.1", port: Int = 0, maxUploadBytes: Int = 64 << 20,
            maxPostBytes: Int = 64 << 10, faults: FaultPlan = FaultPlan(), stopsOnSignals: Bool = false,
            accessLog: URL? = nil
        ) {
            self.root = root
            self.host = host
            self.port = port
            self.maxUploadBytes = maxUploadBytes
            self.maxPostBytes = maxPostBytes
            self.faults = faults
            self.stopsOnSignals = stopsOnSignals
            self.accessLog = accessLog
        }
    }

    /// The port it listens on.
    public let port: Int
    /// `http://HOST:PORT/`.
    public let baseURL: URL
    /// Change the injected faults while it runs.
    public let faults: FaultController
    private let services: ServiceGroup
    private let task: Task<Void, any Error>

    private init(
        port: Int, baseURL: URL, faults: FaultController, services: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.port = port
        self.baseURL = baseURL
        self.faults = faults
        self.services = services
        self.task = task
    }

    /// Starts the server and returns once it listens.
    ///
    /// - Throws: `LoopbackServerError.cannotListen` (with the system's reason) when the address cannot be
    ///   bound, `.cannotOpenRoot` when the root's folders cannot be created, `.corruptPosts` when the posts
    ///   log cannot be read.
    public static func start(_ configuration: Configuration) async throws -> LoopbackServer {
        let directories = try Directories(root: configuration.root)
        let faults = FaultController(plan: configuration.faults)
        let posts = try PostStore.load(
            log: directories.posts, legacy: directories.legacyPosts, media: directories.media)
        MediaRoutes.removeAbandonedUploads(in: directories.media)
        // Middleware applies to the routes added after it, so the error middleware gets the table first and
        // reads it (complete by then) when a request finds no route.
        let routes = RouteTable()
        let router = Router(context: BasicRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: ErrorMiddleware(routes: routes))
        if let file = configuration.accessLog {
            router.add(middleware: AccessLogMiddleware(log: try AccessLog(file: file)))
        }
        router.add(middleware: FaultMiddleware(faults: faults))
        FileRoutes(directory: directories.files).register(on: router, routes: routes)
        MediaRoutes(directory: directories.media, maxBytes: configuration.maxUploadBytes).register(
            on: router, routes: routes)
        PostRoutes(store: posts, maxBytes: configuration.maxPostBytes).register(on: router, routes: routes)
        DownloadRoutes(directory: directories.media).register(on: router, routes: routes)
        CatalogRoutes().register(on: router, routes: routes)

        var logger = Logger(label: "jobkit.server")
        logger.logLevel = .critical
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionRulesHandler()], idleTimeout: .seconds(60),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 64 << 10, maxHeaderFieldCount: 200))
        let app = Application(
            router: router, server: .http1(configuration: http),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "JobKit"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        let services = ServiceGroup(
            configuration: .init(
                services: [app], gracefulShutdownSignals: configuration.stopsOnSignals ? [.sigterm, .sigint] : [],
                logger: logger))
        let task = Task {
            // However the group ends (a bind failure, say), the port stream ends with it: `start` never hangs.
            defer { portContinuation.finish() }
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            do {
                try await task.value
            } catch {
                throw LoopbackServerError.cannotListen(
                    host: configuration.host, port: configuration.port, reason: LoopbackServerError.reason(of: error))
            }
            throw LoopbackServerError.cannotListen(
                host: configuration.host, port: configuration.port, reason: "the server stopped before it listened")
        }
        let baseURL = URL(string: "http://\(configuration.host):\(port)/") ?? URL(fileURLWithPath: "/")
        return LoopbackServer(port: port, baseURL: baseURL, faults: faults, services: services, task: task)
    }

    /// Runs until the server stops (for `jobkit serve`): after `stop()`, or a signal when `stopsOnSignals`.
    public func wait() async throws {
        try await task.value
    }

    /// Stops the server gracefully (requests in flight are answered) and waits until it has.
    public func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
