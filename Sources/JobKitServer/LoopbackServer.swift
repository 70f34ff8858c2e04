import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The HTTP server the demos and tests talk to: the seeds' backends on a loopback address.
///
/// - `GET /files/...`: files under `root/files`, with `Range` and `Content-Length`;
/// - `GET /downloads/{name}?chunk-ms=N`: uploaded media, streamed slowly (for progress);
/// - `PUT /media/{name}`, `POST /media`: uploads stored under `root/media`;
/// - `POST /posts`, `GET /posts`: posts kept in `root/posts.json`, so a restart loses nothing;
/// - `GET /products/{id}` (seed 003) and `GET /feed` (seed 004);
/// - fault injection for every route (`FaultPlan`, `FaultController`).
///
/// ```swift
/// let server = try await LoopbackServer.start(.init(root: directory))   // port 0: an ephemeral port
/// defer { Task { await server.stop() } }
/// let url = server.baseURL.appending(path: "feed")
/// ```
public final class LoopbackServer: Sendable {
    public struct Configuration: Sendable {
        /// Where files, media and posts live; created if missing.
        public var root: URL
        /// Always a loopback address.
        public var host: String
        /// 0 picks a free ephemeral port.
        public var port: Int
        /// Larger uploads are refused with 413.
        public var maxUploadBytes: Int
        public var faults: FaultPlan

        public init(
            root: URL, host: String = "127.0.0.1", port: Int = 0, maxUploadBytes: Int = 64 << 20,
            faults: FaultPlan = FaultPlan()
        ) {
            self.root = root
            self.host = host
            self.port = port
            self.maxUploadBytes = maxUploadBytes
            self.faults = faults
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

    private init(port: Int, host: String, faults: FaultController, services: ServiceGroup, task: Task<Void, any Error>)
    {
        self.port = port
        self.baseURL = URL(string: "http://\(host):\(port)/")!
        self.faults = faults
        self.services = services
        self.task = task
    }

    /// Starts the server and returns once it listens.
    public static func start(_ configuration: Configuration) async throws -> LoopbackServer {
        let directories = try Directories(root: configuration.root)
        let faults = FaultController(plan: configuration.faults)
        let posts = try PostStore(file: directories.posts, mediaDirectory: directories.media)
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: FaultMiddleware(faults: faults))
        var logger = Logger(label: "jobkit.server")
        logger.logLevel = .warning
        router.add(middleware: FileMiddleware(directories.files.path, urlBasePath: "/files", logger: logger))
        MediaRoutes(directory: directories.media, maxBytes: configuration.maxUploadBytes).register(on: router)
        PostRoutes(store: posts).register(on: router)
        DownloadRoutes(directory: directories.media).register(on: router)
        CatalogRoutes().register(on: router)

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "JobKit"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger)
        let services = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            // The server ended before it listened: report why (a port in use, say).
            try await task.value
            throw CancellationError()
        }
        return LoopbackServer(port: port, host: configuration.host, faults: faults, services: services, task: task)
    }

    /// Runs until the server stops (for `jobkit serve`).
    public func wait() async throws {
        try await task.value
    }

    /// Stops the server gracefully (requests in flight are answered) and waits until it has.
    public func stop() async {
        await services.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

/// The folders under the root.
struct Directories {
    let files: URL
    let media: URL
    let posts: URL

    init(root: URL) throws {
        files = root.appendingPathComponent("files", isDirectory: true)
        media = root.appendingPathComponent("media", isDirectory: true)
        posts = root.appendingPathComponent("posts.json")
        for directory in [files, media] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
    }
}

extension Response {
    /// A JSON response.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// A JSON error response: `{"error": message}`.
    static func error(_ status: HTTPResponse.Status, _ message: String) throws -> Response {
        try json(ErrorBody(error: message), status: status)
    }
}
