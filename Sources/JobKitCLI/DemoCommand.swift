import ArgumentParser
import Dispatch
import Foundation
import JobKit

/// `jobkit demo`: the seed scenarios, in process, with simulated uploads and downloads.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Publish a post after its media (seed 000) and run a bounded download manager (seed 002).",
        discussion: """
            Every handler runs on the main queue, which this command keeps serviced. It exits 0 when \
            every scenario had its expected outcome: the post published, or — with --fail-upload — \
            not published.
            """)

    @Option(help: "Number of photos in the post.")
    var photos = 3

    @Option(help: "Number of videos in the post.")
    var videos = 2

    @Flag(help: "Make one media upload fail: the post must then not be published.")
    var failUpload = false

    @Option(help: "Number of downloads.")
    var jobs = 20

    @Option(help: "At most this many downloads at once.")
    var maxConcurrent = 3

    @Flag(help: "Give each download step a random duration of 1 to 3 steps instead of exactly one.")
    var randomizeTime = false

    @Option(help: "Duration of one simulated step, in milliseconds.")
    var stepMilliseconds = 100

    @Option(
        help: ArgumentHelp("Write a Chrome trace (Perfetto, chrome://tracing) of every run.", valueName: "file.json"))
    var trace: String?

    @Option(help: ArgumentHelp("Write an SVG timeline of every run: one lane per slot.", valueName: "file.svg"))
    var timeline: String?

    func validate() throws {
        guard photos >= 0, videos >= 0 else { throw ValidationError("--photos and --videos must be 0 or more.") }
        guard jobs >= 0 else { throw ValidationError("--jobs must be 0 or more.") }
        guard maxConcurrent >= 1 else { throw ValidationError("--max-concurrent must be at least 1.") }
        guard stepMilliseconds >= 0 else { throw ValidationError("--step-milliseconds must be 0 or more.") }
    }

    func run() async throws {
        let timing = SimulatedTiming(stepMilliseconds: stepMilliseconds, randomize: randomizeTime)
        let chromeTrace = trace.map { _ in ChromeTraceWriter() }
        let svgTimeline = timeline.map { _ in TimelineSVGWriter() }
        let tracers: [any JobTracer] = [chromeTrace as (any JobTracer)?, svgTimeline].compactMap { $0 }
        let publish = PublishScenario(
            photos: photos, videos: videos, failUpload: failUpload, timing: timing, tracers: tracers)
        let downloads = DownloadScenario(jobs: jobs, maxConcurrent: maxConcurrent, timing: timing, tracers: tracers)
        let published = await publish.run(print: { print($0) })
        let downloaded = await downloads.run(print: { print($0) })
        if let chromeTrace, let trace {
            try chromeTrace.write(to: URL(fileURLWithPath: trace))
            print("trace written to \(trace)")
        }
        if let svgTimeline, let timeline {
            try svgTimeline.write(to: URL(fileURLWithPath: timeline))
            print("timeline written to \(timeline)")
        }
        guard published == !failUpload, downloaded else { throw ExitCode.failure }
    }
}

/// How long simulated work takes.
struct SimulatedTiming: Sendable {
    var stepMilliseconds: Int
    var randomize: Bool

    func nextStep() -> DispatchTimeInterval {
        .milliseconds(randomize ? Int.random(in: stepMilliseconds...(3 * stepMilliseconds)) : stepMilliseconds)
    }
}
