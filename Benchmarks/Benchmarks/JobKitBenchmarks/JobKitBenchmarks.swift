import Benchmark
import Dispatch
import Foundation
import JobKit
import SeedDesign

// Each JobKit benchmark stands beside the raw GCD code that does the same work, in the same run:
// compare the pairs, not absolute numbers (this machine is shared and noisy). Every unit is distinct,
// as users' are: a closure capturing its index, for raw GCD and JobKit alike; the rows of one job
// value repeated are kept, named as such.
//
//   swift package --package-path Benchmarks benchmark
//
// BENCHMARKS.md records the figures and the ratios.

let fanOutCount = 100_000
let sequenceLength = 1_000_000
let boundedCount = 2_000
let boundedLimit = 8
let boundedMilliseconds = 5
let pendingCount = 100_000

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .threads],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 20)

    // MARK: Fan-out of 100,000 no-op jobs

    Benchmark("fan-out 100k: raw GCD (DispatchGroup)") { benchmark in
        let queue = DispatchQueue.global()
        let group = DispatchGroup()
        for index in 0..<fanOutCount {
            queue.async(group: group) { blackHole(index) }
        }
        group.wait()
    }

    Benchmark("fan-out 100k: JobKit group") { benchmark in
        wait(for: Job.group((0..<fanOutCount).map(distinctJob)))
    }

    Benchmark("fan-out 100k: JobKit group (one job repeated)") { benchmark in
        let noop = Job<Void> { $0.finish() }
        wait(for: Job.group(Array(repeating: noop, count: fanOutCount)))
    }

    Benchmark("fan-out 100k: seed Task group") { benchmark in
        let done = DispatchSemaphore(value: 0)
        SeedTask.group((0..<fanOutCount).map(distinctSeedTask)).perform { _ in done.signal() }
        done.wait()
    }

    Benchmark("fan-out 100k: TaskGroup") { benchmark in
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<fanOutCount { group.addTask { blackHole(index) } }
            }
            done.signal()
        }
        done.wait()
    }

    // MARK: A sequence of 1,000,000 no-op jobs

    Benchmark("sequence 1M: raw GCD (async chain)") { benchmark in
        let queue = DispatchQueue.global()
        let done = DispatchSemaphore(value: 0)
        @Sendable func step(_ index: Int) {
            guard index < sequenceLength else {
                done.signal()
                return
            }
            queue.async { step(index + 1) }
        }
        step(0)
        done.wait()
    }

    Benchmark("sequence 1M: JobKit sequence") { benchmark in
        wait(for: Job.sequence((0..<sequenceLength).map(distinctJob)))
    }

    Benchmark("sequence 1M: JobKit sequence (one job repeated)") { benchmark in
        let noop = Job<Void> { $0.finish() }
        wait(for: Job.sequence(Array(repeating: noop, count: sequenceLength)))
    }

    Benchmark("sequence 1M: seed Task sequence") { benchmark in
        let done = DispatchSemaphore(value: 0)
        SeedTask.sequence((0..<sequenceLength).map(distinctSeedTask)).perform { _ in done.signal() }
        done.wait()
    }

    Benchmark("sequence 1M: TaskGroup (one child task at a time)") { benchmark in
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<sequenceLength {
                    group.addTask { blackHole(index) }
                    await group.next()
                }
            }
            done.signal()
        }
        done.wait()
    }

    // MARK: 2,000 jobs of 5 ms, at most 8 at once (ideal makespan 2000 / 8 × 5 ms = 1.25 s)

    let boundedConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .threads, .custom("efficiency ‰", polarity: .prefersLarger, useScalingFactor: false)],
        warmupIterations: 0, maxDuration: .seconds(10), maxIterations: 3)

    Benchmark("bounded 2000×5ms/8: raw GCD (seed: semaphore)", configuration: boundedConfiguration) { benchmark in
        let start = DispatchTime.now()
        let queue = DispatchQueue.global(qos: .userInitiated)
        let group = DispatchGroup()
        let semaphore = DispatchSemaphore(value: boundedLimit)
        // The timers fire on their own queue: on `queue` they would wait behind the blocked waiters.
        let timers = DispatchQueue(label: "timers")
        for _ in 0..<boundedCount {
            queue.async(group: group) {
                semaphore.wait()
                group.enter()
                completeAfter(milliseconds: boundedMilliseconds, on: timers) {
                    semaphore.signal()
                    group.leave()
                }
            }
        }
        group.wait()
        benchmark.measurement(.custom("efficiency ‰"), efficiencyPerMille(since: start))
    }

    Benchmark("bounded 2000×5ms/8: raw GCD (counter, no blocking)", configuration: boundedConfiguration) {
        benchmark in
        let start = DispatchTime.now()
        let queue = DispatchQueue.global(qos: .userInitiated)
        let done = DispatchSemaphore(value: 0)
        let state = NSLock()
        nonisolated(unsafe) var next = 0
        nonisolated(unsafe) var finished = 0
        @Sendable func launch() {
            queue.async {
                completeAfter(milliseconds: boundedMilliseconds, on: queue) {
                    state.lock()
                    finished += 1
                    let startAnother = next < boundedCount
                    if startAnother { next += 1 }
                    let all = finished == boundedCount
                    state.unlock()
                    if startAnother { launch() }
                    if all { done.signal() }
                }
            }
        }
        state.lock()
        next = boundedLimit
        state.unlock()
        for _ in 0..<boundedLimit { launch() }
        done.wait()
        benchmark.measurement(.custom("efficiency ‰"), efficiencyPerMille(since: start))
    }

    Benchmark("bounded 2000×5ms/8: JobKit group(maxConcurrent: 8)", configuration: boundedConfiguration) {
        benchmark in
        let start = DispatchTime.now()
        let jobs = (0..<boundedCount).map { index in
            Job<Void> { controller in
                completeAfter(milliseconds: boundedMilliseconds, on: controller.queue) {
                    blackHole(index)
                    controller.finish()
                }
            }
        }
        wait(for: Job.group(jobs, maxConcurrent: boundedLimit), on: .global(qos: .userInitiated))
        benchmark.measurement(.custom("efficiency ‰"), efficiencyPerMille(since: start))
    }

    // MARK: JobQueue: the cost per job must not grow with the queue (10k vs 100k, within 1.3×)

    let queueConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .custom("ns per job", polarity: .prefersSmaller, useScalingFactor: false)],
        warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 10)
    // The same 10,000 no-op jobs, 8 at once, without JobQueue: what its bookkeeping costs.
    Benchmark("JobQueue 10k no-op jobs, 8 at once: raw GCD (counter)", configuration: queueConfiguration) { benchmark in
        let start = DispatchTime.now()
        runBounded(count: 10_000, limit: 8) { done in done() }
        benchmark.measurement(.custom("ns per job"), nanoseconds(since: start) / 10_000)
    }

    Benchmark("JobQueue 10k no-op jobs, 8 at once: seed 002 (semaphore)", configuration: queueConfiguration) {
        benchmark in
        let start = DispatchTime.now()
        let queue = DispatchQueue(label: "seed002", qos: .userInitiated, attributes: .concurrent)
        let group = DispatchGroup()
        let slots = DispatchSemaphore(value: 8)
        for _ in 0..<10_000 {
            queue.async(group: group) {
                slots.wait()
                blackHole(0)
                slots.signal()
            }
        }
        group.wait()
        benchmark.measurement(.custom("ns per job"), nanoseconds(since: start) / 10_000)
    }

    Benchmark("JobQueue 10k no-op jobs, 8 at once: TaskGroup", configuration: queueConfiguration) { benchmark in
        let start = DispatchTime.now()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<10_000 {
                    if index >= 8 { await group.next() }
                    group.addTask { blackHole(0) }
                }
            }
            done.signal()
        }
        done.wait()
        benchmark.measurement(.custom("ns per job"), nanoseconds(since: start) / 10_000)
    }

    Benchmark("JobQueue 10k no-op jobs, 8 at once: seed Task group (no limit)", configuration: queueConfiguration) {
        benchmark in
        let start = DispatchTime.now()
        let done = DispatchSemaphore(value: 0)
        SeedTask.group((0..<10_000).map(distinctSeedTask)).perform { _ in done.signal() }
        done.wait()
        benchmark.measurement(.custom("ns per job"), nanoseconds(since: start) / 10_000)
    }

    for count in [10_000, 100_000] {
        Benchmark("JobQueue \(count / 1_000)k no-op jobs, 8 at once", configuration: queueConfiguration) { benchmark in
            let jobQueue = JobQueue<Int>(maxConcurrent: 8, resultQueue: DispatchQueue(label: "results"))
            let jobs = (0..<count).map(distinctJob)
            let done = DispatchSemaphore(value: 0)
            let start = DispatchTime.now()
            for (id, job) in jobs.enumerated() { try? jobQueue.add(job, id: id) }
            Task {
                await jobQueue.waitUntilIdle()
                done.signal()
            }
            done.wait()
            let elapsed = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
            benchmark.measurement(.custom("ns per job"), Int(elapsed) / count)
        }
    }

    // MARK: Memory held by a pending job
    //
    // Heap bytes allocated while 100,000 jobs are made and queued behind a blocked slot (measured
    // region only); divide `Malloc bytes` by 100,000 for the bytes per pending job.

    let memoryConfiguration = Benchmark.Configuration(
        metrics: [.mallocBytesCount, .mallocCountTotal], warmupIterations: 1, maxDuration: .seconds(10),
        maxIterations: 5)

    Benchmark("pending 100k: raw GCD (blocks on a suspended queue)", configuration: memoryConfiguration) { benchmark in
        let queue = DispatchQueue(label: "suspended")
        queue.suspend()
        benchmark.startMeasurement()
        for index in 0..<pendingCount { queue.async { blackHole(index) } }
        benchmark.stopMeasurement()
        queue.resume()
        queue.sync {}
    }

    Benchmark("pending 100k: JobKit group(maxConcurrent: 1) behind a blocker", configuration: memoryConfiguration) {
        benchmark in
        let release = DispatchSemaphore(value: 0)
        let blocker = Job<Void> { controller in
            DispatchQueue.global().async {
                release.wait()
                controller.finish()
            }
        }
        let done = DispatchSemaphore(value: 0)
        benchmark.startMeasurement()
        let jobs =
            [blocker]
            + (0..<pendingCount).map { index in
                Job<Void> {
                    blackHole(index); $0.finish()
                }
            }
        let handle = Job.group(jobs, maxConcurrent: 1).perform(resultQueue: .global()) { _ in done.signal() }
        while handle.state == .pending { usleep(50) }
        benchmark.stopMeasurement()
        release.signal()
        done.wait()
    }
}

/// Performs `job` and blocks the benchmark's thread until it completes (benchmark code only).
func wait(for job: Job<Void>, on queue: DispatchQueue = .global()) {
    let done = DispatchSemaphore(value: 0)
    job.perform(on: queue, resultQueue: .global()) { result in
        precondition((try? result.get()) != nil, "benchmark job failed: \(result)")
        done.signal()
    }
    done.wait()
}

/// Calls `body` on `queue` after `milliseconds`, from a strict timer with no leeway: the same
/// "5 ms of work that holds no thread" for every variant.
func completeAfter(milliseconds: Int, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
    let timer = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
    timer.schedule(deadline: .now() + .milliseconds(milliseconds), leeway: .nanoseconds(0))
    timer.setEventHandler {
        timer.cancel()
        body()
    }
    timer.activate()
}

/// The ideal makespan over the measured one, in thousandths.
func efficiencyPerMille(since start: DispatchTime) -> Int {
    let ideal = Double(boundedCount / boundedLimit * boundedMilliseconds) * 1e6
    let measured = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds)
    return Int(1000 * ideal / measured)
}

/// Runs `count` pieces of `work`, at most `limit` at once, on the global queue, counted under a
/// lock: raw GCD's way to bound concurrency without blocking a thread. Returns when all ended.
func runBounded(count: Int, limit: Int, work: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) {
    let queue = DispatchQueue.global()
    let done = DispatchSemaphore(value: 0)
    let state = NSLock()
    let width = min(limit, count)
    nonisolated(unsafe) var next = width
    nonisolated(unsafe) var finished = 0
    @Sendable func launch() {
        queue.async {
            work {
                state.lock()
                finished += 1
                let startAnother = next < count
                if startAnother { next += 1 }
                let all = finished == count
                state.unlock()
                if startAnother { launch() }
                if all { done.signal() }
            }
        }
    }
    for _ in 0..<width { launch() }
    done.wait()
}

/// Nanoseconds since `start`.
func nanoseconds(since start: DispatchTime) -> Int {
    Int(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds)
}

/// A job of its own for unit `index`, as users make them: its body captures the index.
@Sendable func distinctJob(_ index: Int) -> Job<Void> {
    Job { controller in
        blackHole(index)
        controller.finish()
    }
}

/// The seed's `Task` for unit `index`, capturing it likewise.
@Sendable func distinctSeedTask(_ index: Int) -> SeedTask {
    SeedTask { task in
        blackHole(index)
        task.finish()
    }
}
