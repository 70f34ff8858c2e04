import Dispatch
import Foundation
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `jobkit _probe …`: the subject of JobKitTests' process-level tests, hidden from `--help` and
/// dispatched before the command line is parsed, so that it runs as plain synchronous code on the main
/// thread (nothing services the main queue unless a mode calls `dispatchMain()`).
///
///     jobkit _probe THRESHOLD_MS RUN_MS block   never services the main queue: the watchdog must warn
///     jobkit _probe THRESHOLD_MS RUN_MS serve   services it with dispatchMain(): it must stay quiet
///     jobkit _probe threads   runs 600 jobs, 8 at once, and prints `threads before=N peak=M cores=C`:
///                             a thread count measured alone, undisturbed by other tests
///     jobkit _probe timeouts N   completes N runs of `.just(1).timeout(.seconds(3600))`, 1,000 at a
///                             time, and prints `rss before=KB after=KB`: finished timers must
///                             release what they hold at once, not in an hour
///     jobkit _probe twice N   N runs whose bodies complete twice, no diagnostics handler: prints
///                             `misuses count=N`; standard error must carry one line, not N
enum TestProbe {
    /// The first argument that selects the probe.
    static let commandName = "_probe"

    /// Runs the probe mode `arguments` names, then exits the process.
    static func run(_ arguments: [String]) -> Never {
        if arguments.first == ProbeDownloadManager.mode { ProbeDownloadManager.run(Array(arguments.dropFirst())) }
        if arguments.first == "timeouts" {
            let total = arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
            let results = DispatchQueue(label: "probe")
            func runBatch(_ count: Int) {
                let group = DispatchGroup()
                for _ in 0..<count {
                    group.enter()
                    Job<Int>.just(1).timeout(.seconds(3600)).perform(resultQueue: results) { _ in group.leave() }
                }
                group.wait()
            }
            runBatch(1_000)  // warm up: the thread pool, the allocator, the code
            let before = residentKilobytes()
            for _ in 0..<(total / 1_000) { runBatch(1_000) }
            // Let GCD finish releasing the last cancelled timers.
            DispatchQueue.global().sync(flags: .barrier) {}
            usleep(200_000)
            print("rss before=\(before) after=\(residentKilobytes())")
            exit(0)
        }

        if arguments.first == "twice" {
            let total = arguments.dropFirst().first.flatMap(Int.init) ?? 1_000
            let group = DispatchGroup()
            for _ in 0..<total {
                group.enter()
                Job<Int> { controller in
                    controller.finish(1)
                    controller.finish(2)
                    group.leave()  // after the second finish has been reported
                }.perform(resultQueue: DispatchQueue(label: "probe")) { _ in }
            }
            group.wait()
            print("misuses count=\(JobDiagnostics.eventCount)")
            exit(0)
        }

        if arguments.first == "threads" {
            let before = threadCount()
            let peak = Peak(before)
            let jobs = (0..<600).map { _ in
                Job<Void> { controller in
                    peak.record(threadCount())
                    controller.queue.asyncAfter(deadline: .now() + .milliseconds(1)) { controller.finish() }
                }
            }
            let done = DispatchSemaphore(value: 0)
            Job.group(jobs, maxConcurrent: 8).perform(resultQueue: DispatchQueue(label: "probe")) { _ in done.signal() }
            done.wait()
            print("threads before=\(before) peak=\(peak.value) cores=\(ProcessInfo.processInfo.activeProcessorCount)")
            exit(0)
        }
        let thresholdMilliseconds = arguments.first.flatMap(Int.init) ?? 200
        let runMilliseconds = arguments.dropFirst().first.flatMap(Int.init) ?? 1500
        let servesMainQueue = arguments.dropFirst(2).first == "serve"

        MainQueueWatchdog.threshold = .milliseconds(thresholdMilliseconds)
        Job<Void>.empty.perform { _ in print("handler ran") }

        if servesMainQueue {
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(runMilliseconds)) {
                print("probe done")
                exit(0)
            }
            dispatchMain()
        } else {
            // The probe runs on the main thread and never returns to a run loop or dispatchMain():
            // the handler above waits on the main queue until the process exits.
            let never = DispatchSemaphore(value: 0)
            _ = never.wait(timeout: .now() + .milliseconds(runMilliseconds))
            print("probe done")
        }
        exit(0)
    }

    /// The number of threads of this process, from `/proc/self/status` (0 where there is none).
    static func threadCount() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// This process's resident memory in KB, from `/proc/self/status` (0 where there is none).
    static func residentKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst("VmRSS:".count).split(whereSeparator: \.isWhitespace).first ?? "") ?? 0
        }
        return 0
    }
}

/// The highest count recorded.
final class Peak: Sendable {
    private let current: LockedBox<Int>

    init(_ value: Int) { current = LockedBox.make(value) }

    func record(_ value: Int) { current.withLock { $0 = max($0, value) } }

    var value: Int { current.withLock { $0 } }
}
