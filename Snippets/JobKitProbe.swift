// The process the tests measure and kill: `JobKitProbe MODE …`, built beside the tests (a snippet, so
// it is no product of the package and never part of the shipped `jobkit`). See `TestProbe` below.
import Dispatch
import Foundation
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

TestProbe.run(Array(CommandLine.arguments.dropFirst()))

/// `JobKitProbe …`: the subject of the process-level tests; it runs as plain synchronous code on the
/// main thread (nothing services the main queue unless a mode calls `dispatchMain()`).
///
///     JobKitProbe THRESHOLD_MS RUN_MS block   never services the main queue: the watchdog must warn
///     JobKitProbe THRESHOLD_MS RUN_MS serve   services it with dispatchMain(): it must stay quiet
///     JobKitProbe threads   runs 600 jobs, 8 at once, and prints `threads before=N peak=M cores=C`:
///                             a thread count measured alone, undisturbed by other tests
///     JobKitProbe timeouts N   completes N runs of `.just(1).timeout(.seconds(3600))`, 1,000 at a
///                             time, and prints `rss before=KB after=KB`: finished timers must
///                             release what they hold at once, not in an hour
///     JobKitProbe cancelled-delays N   N runs of `.just(1).delay(.seconds(3600))`, each cancelled from
///                             another thread as soon as its timer is armed (`schedule` returned), 1,000
///                             at a time; prints `rss before=KB after=KB`: a cancelled timer must
///                             release what it holds at once
///     JobKitProbe cancelled-timeouts N   the same for `.timeout(.seconds(3600))` of a job that never
///                             completes
///     JobKitProbe cancelled-backoffs N   the same for `.retry(2, backoff: .constant(.seconds(3600)))`
///                             of a job that fails: cancelled while it waits to retry
///     JobKitProbe watchdog   prints `watchdog threshold-ms=N` (or `watchdog off`): the threshold that
///                             JOBKIT_MAIN_WATCHDOG set, read as every handler on the main queue reads it
///     JobKitProbe twice N   N runs whose bodies complete twice, no diagnostics handler: prints
///                             `misuses count=N`; standard error must carry one line, not N
enum TestProbe {
    /// Runs the probe mode `arguments` names, then exits the process.
    static func run(_ arguments: [String]) -> Never {
        if arguments.first == "timeouts" {
            let total = arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
            let results = DispatchQueue(label: "probe")
            measureResidentGrowth(runs: total) { done in
                Job<Int>.just(1).timeout(.seconds(3600)).perform(resultQueue: results) { _ in done() }
            }
        }
        if let mode = arguments.first, let job = cancelledTimerJobs[mode] {
            let total = arguments.dropFirst().first.flatMap(Int.init) ?? 150_000
            let results = DispatchQueue(label: "probe")
            measureResidentGrowth(runs: total) { done in
                let canceller = CancelWhenSignalled()
                // Another thread cancels the run as soon as its timer is armed.
                let scheduler = ArmedSignallingScheduler { DispatchQueue.global().async { canceller.signal() } }
                canceller.keep(job(scheduler).perform(resultQueue: results) { _ in done() })
            }
        }

        if arguments.first == "watchdog" {
            if let threshold = MainQueueWatchdog.threshold {
                print("watchdog threshold-ms=\(Int(threshold / .milliseconds(1)))")
            } else {
                print("watchdog off")
            }
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

    /// The jobs of the `cancelled-…` modes, each given the scheduler its timer must be armed on.
    static let cancelledTimerJobs: [String: @Sendable (ArmedSignallingScheduler) -> Job<Int>] = [
        "cancelled-delays": { Job<Int>.just(1).delay(.seconds(3600), scheduler: $0) },
        "cancelled-timeouts": { Job<Int> { _ in }.timeout(.seconds(3600), scheduler: $0) },
        "cancelled-backoffs": {
            Job<Int>.failure(ProbeFailure()).retry(2, backoff: .constant(.seconds(3600)), scheduler: $0)
        },
    ]

    /// Performs `runs` runs through `start` (which calls `done` once per run, when it ended), 1,000 at
    /// a time, and prints `rss before=KB after=KB`: resident memory after a warm-up batch and after
    /// the rest. Memory a run leaves behind shows as growth; memory released is reused by the next
    /// batch.
    static func measureResidentGrowth(runs: Int, start: (_ done: @escaping @Sendable () -> Void) -> Void) -> Never {
        func runBatch(_ count: Int) {
            let group = DispatchGroup()
            for _ in 0..<count {
                group.enter()
                start { group.leave() }
            }
            group.wait()
        }
        runBatch(1_000)  // warm up: the thread pool, the allocator, the code
        let before = residentKilobytes()
        for _ in 0..<(runs / 1_000) { runBatch(1_000) }
        // Let GCD finish releasing the last cancelled timers.
        DispatchQueue.global().sync(flags: .barrier) {}
        usleep(200_000)
        print("rss before=\(before) after=\(residentKilobytes())")
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
    private let current: ProbeLock<Int>

    init(_ value: Int) { current = ProbeLock(value) }

    func record(_ value: Int) { current.withLock { $0 = max($0, value) } }

    var value: Int { current.withLock { $0 } }
}

/// A `JobScheduler` that forwards to `.dispatch` and calls `armed` once each `schedule` has returned.
struct ArmedSignallingScheduler: JobScheduler {
    let armed: @Sendable () -> Void

    var now: Duration { DispatchScheduler.dispatch.now }

    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let scheduled = DispatchScheduler.dispatch.schedule(after: delay, action)
        armed()
        return scheduled
    }
}

/// Cancels a run once signalled, whether its handle or the signal comes first; keeps the handle, as
/// a harness would. (The scheduler that signals is captured by the run's job: a run that kept its
/// job's body after it ended would keep itself alive through this handle.)
final class CancelWhenSignalled: Sendable {
    private struct State {
        var handle: JobHandle?
        var isSignalled = false
    }

    private let state = ProbeLock(State())

    /// Keeps the run's handle; cancels the run now if the signal came first.
    func keep(_ handle: JobHandle) {
        let cancelNow = state.withLock { state -> Bool in
            state.handle = handle
            return state.isSignalled
        }
        if cancelNow { handle.cancel() }
    }

    /// Cancels the run, or has `keep` cancel it.
    func signal() {
        let handle = state.withLock { state -> JobHandle? in
            state.isSignalled = true
            return state.handle
        }
        handle?.cancel()
    }
}

/// The failure of the `cancelled-backoffs` probe's job.
struct ProbeFailure: Error {}

/// A value behind a lock (JobKit's own lock is package-visible, and a snippet sees only the public API).
// Safety: `value` is only touched under `lock`.
final class ProbeLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
