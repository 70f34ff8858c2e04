import ArgumentParser
import Dispatch
import Foundation
import JobKit
import JobKitServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `jobkit demo`: the four scenarios (downloads, publish, result queue, feed) over real HTTP, against an in-process loopback server.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run four scenarios over HTTP: downloads, publish, result queue and feed.",
        discussion: """
            Starts the JobKit server on an ephemeral 127.0.0.1 port (or uses --server) and runs: \
            downloads (a download manager, at most --max-concurrent at once), publish (a post created only \
            after all its media uploaded), result queue (a product loader with an injected result queue) \
            and feed (a feed loader used by closure and by a weak delegate whose screen closes \
            mid-request). Each has a guide in the JobKit documentation ("Scenarios" maps them). Every \
            handler runs on the main queue, which this command keeps serviced. It exits 0 only when every \
            scenario had its expected outcome.
            """)

    @Option(help: "Number of downloads.")
    var jobs = 20

    @Option(help: "At most this many downloads at once.")
    var maxConcurrent = 3

    @Flag(help: "Give the downloads random sizes (so random durations) instead of one size.")
    var randomizeTime = false

    @Option(help: "Pause between 32 KiB chunks of a download, in milliseconds.")
    var chunkMilliseconds = 15

    @Option(help: "Number of photos in the post.")
    var photos = 3

    @Option(help: "Number of videos in the post.")
    var videos = 2

    @Flag(help: "Make one media upload fail: the post must then not be created.")
    var failUpload = false

    @Option(help: ArgumentHelp("Use this JobKit server instead of starting one.", valueName: "url"))
    var server: String?

    @Option(
        help: ArgumentHelp("Write a Chrome trace (Perfetto, chrome://tracing) of every run.", valueName: "file.json"))
    var trace: String?

    @Option(help: ArgumentHelp("Write an SVG timeline of every run: one lane per slot.", valueName: "file.svg"))
    var timeline: String?

    func validate() throws {
        guard photos >= 0, videos >= 0 else { throw ValidationError("--photos and --videos must be 0 or more.") }
        guard jobs >= 0 else { throw ValidationError("--jobs must be 0 or more.") }
        guard maxConcurrent >= 1 else { throw ValidationError("--max-concurrent must be at least 1.") }
        guard chunkMilliseconds >= 0 else { throw ValidationError("--chunk-milliseconds must be 0 or more.") }
        if let server, URL(string: server)?.scheme?.hasPrefix("http") != true {
            throw ValidationError("--server must be an http:// URL, like http://127.0.0.1:8080/")
        }
    }

    func run() async throws {
        StandardOutput.makeLineBuffered()  // piped, every line arrives when it is printed
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let local: LoopbackServer? =
            server == nil ? try await LoopbackServer.start(.init(root: scratch.appendingPathComponent("server"))) : nil
        let baseURL = local?.baseURL ?? URL(string: server!.hasSuffix("/") ? server! : server! + "/")!
        print("server: \(baseURL.absoluteString)\(local == nil ? "" : " (in process)")")

        let chromeTrace = trace.map { _ in ChromeTraceWriter() }
        let svgTimeline = timeline.map { _ in TimelineSVGWriter() }
        let backend = DemoBackend(
            baseURL: baseURL, client: .shared, print: { print($0) },
            tracers: [chromeTrace as (any JobTracer)?, svgTimeline].compactMap { $0 })

        let downloads = DownloadScenario(
            jobs: jobs, maxConcurrent: maxConcurrent, randomizeTime: randomizeTime,
            chunkMilliseconds: chunkMilliseconds, directory: scratch,
            display: await .standard(json: false, quiet: false, lineStyle: .jobStates))
        let outcomes = [
            ("downloads", await downloads.run(on: backend)),
            (
                "publish",
                await PublishScenario(photos: photos, videos: videos, failUpload: failUpload)
                    .run(on: backend)
            ),
            ("result queue", await ProductScenario().run(on: backend)),
            ("feed", await FeedScenario().run(on: backend)),
        ]
        await local?.stop()

        if let chromeTrace, let trace {
            try chromeTrace.write(to: URL(fileURLWithPath: trace))
            print("trace written to \(trace)")
        }
        if let svgTimeline, let timeline {
            try svgTimeline.write(to: URL(fileURLWithPath: timeline))
            print("timeline written to \(timeline)")
        }
        for (name, expected) in outcomes { print("\(expected ? "✓" : "✗") \(name)") }
        guard outcomes.allSatisfy(\.1) else { throw ExitCode.failure }
    }
}
