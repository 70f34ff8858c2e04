// Runs one workload once, for `Benchmarks/instructions.sh` to count its instructions with callgrind
// and for `Benchmarks/wall-time.sh` to time.
//
//   JobKitInstructions WORKLOAD N [--time]
//
// Every workload makes what users make: a distinct unit of work per job — a closure that captures the
// unit's index — and raw GCD enqueues the same kind of closure, written as one would by hand (a block
// literal per unit, on a queue fetched once). The `-repeated` workloads perform one
// job value N times instead (the figure before issue 24), kept as a second row.
//
// Workloads: fanout-gcd, fanout-jobkit, fanout-jobkit-repeated, fanout-seed, fanout-taskgroup (N units
// at once, then wait), sequence-gcd, sequence-jobkit, sequence-jobkit-repeated, sequence-seed (N units
// one after another). The `-serial` variants of raw GCD and JobKit do the same on one serial queue,
// where GCD never wakes another thread: the steadiest figures for comparing two builds of JobKit.
// `instructions.sh` runs each at two sizes and reports the marginal cost per unit,
// so start-up costs cancel out. With `--time` the workload prints its wall time in microseconds, from
// before its units are made until the last has ended.
//
// Memory workloads (`Benchmarks/pending-memory.sh`) print bytes per pending unit — the growth of peak
// resident memory while N units wait, divided by N: pending-gcd, pending-seed, pending-jobkit,
// pending-jobkit-repeated (N performs queued on an inactive queue), pending-member-jobkit (a group of
// N members, one at a time, whose first member blocks — the array of jobs included),
// pending-member-seed (the same through the seed's sequence).
import Dispatch
import Foundation
import JobKit
import SeedDesign

let arguments = Array(CommandLine.arguments.dropFirst())
guard (2...3).contains(arguments.count), let count = Int(arguments[1]), arguments.count == 2 || arguments[2] == "--time"
else {
    FileHandle.standardError.write(Data("usage: JobKitInstructions WORKLOAD N [--time]\n".utf8))
    exit(64)
}
let start = DispatchTime.now()

/// The work of unit `index`: a call the optimizer cannot remove, the same in every workload.
@inline(never) @_optimize(none)
@Sendable func use(_ index: Int) {}

let done = DispatchSemaphore(value: 0)

/// Signalled once the last unit of a workload has been released: a workload waits for it as well as
/// for its outcome, so that releasing the units (on a worker thread, after the outcome) is counted in
/// every run instead of racing the process's exit.
let released = DispatchSemaphore(value: 0)

switch arguments[0] {
case "fanout-gcd":
    let queue = DispatchQueue.global()
    let group = DispatchGroup()
    for index in 0..<count { queue.async(group: group) { use(index) } }
    group.wait()
case "fanout-jobkit":
    let jobs = distinctJobs(count)
    Job.group(jobs).perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
    released.wait()
case "fanout-jobkit-serial":
    Job.group(distinctJobs(count)).perform(on: DispatchQueue(label: "serial"), resultQueue: .global()) { _ in
        done.signal()
    }
    done.wait()
    released.wait()
case "fanout-jobkit-repeated":
    Job.group(repeatedJobs(count))
        .perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
    released.wait()
case "fanout-seed":
    let tasks = distinctSeedTasks(count)
    SeedTask.group(tasks).perform { _ in done.signal() }
    done.wait()
    released.wait()
case "fanout-taskgroup":
    Task.detached {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<count { group.addTask { use(index) } }
        }
        done.signal()
    }
    done.wait()
case "fanout-gcd-serial":
    let queue = DispatchQueue(label: "serial")
    let group = DispatchGroup()
    for index in 0..<count { queue.async(group: group) { use(index) } }
    group.wait()
case "sequence-gcd-serial":
    let queue = DispatchQueue(label: "serial")
    @Sendable func step(_ index: Int) {
        guard index < count else {
            done.signal()
            return
        }
        queue.async {
            use(index)
            step(index + 1)
        }
    }
    step(0)
    done.wait()
case "sequence-gcd":
    let queue = DispatchQueue.global()
    @Sendable func step(_ index: Int) {
        guard index < count else {
            done.signal()
            return
        }
        queue.async {
            use(index)
            step(index + 1)
        }
    }
    step(0)
    done.wait()
case "sequence-jobkit":
    let jobs = distinctJobs(count)
    Job.sequence(jobs).perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
    released.wait()
case "sequence-jobkit-serial":
    Job.sequence(distinctJobs(count)).perform(on: DispatchQueue(label: "serial"), resultQueue: .global()) { _ in
        done.signal()
    }
    done.wait()
    released.wait()
case "sequence-jobkit-repeated":
    Job.sequence(repeatedJobs(count))
        .perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
    released.wait()
case "sequence-seed":
    let tasks = distinctSeedTasks(count)
    SeedTask.sequence(tasks).perform { _ in done.signal() }
    done.wait()
    released.wait()
case "pending-gcd":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let before = peakResidentBytes()
    for index in 0..<count { queue.async { use(index) } }
    printBytesPerJob(since: before)
case "pending-seed":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let before = peakResidentBytes()
    for index in 0..<count {
        SeedTask { controller in
            use(index)
            controller.finish()
        }.perform(on: queue) { _ in }
    }
    printBytesPerJob(since: before)
case "pending-jobkit":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    // Made once, like `.main`: on Linux each `DispatchQueue.global()` call makes a new 24-byte wrapper,
    // which would be counted against every pending job.
    let resultQueue = DispatchQueue.global()
    let before = peakResidentBytes()
    for index in 0..<count {
        Job<Void> { controller in
            use(index)
            controller.finish()
        }.perform(on: queue, resultQueue: resultQueue) { _ in }
    }
    printBytesPerJob(since: before)
case "pending-jobkit-main":
    // The default form: a `@MainActor` handler, delivered on the main queue (never here: the queue
    // stays inactive). The same bytes as `pending-jobkit`: the handler is stored as it is, no thunk.
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let before = peakResidentBytes()
    for index in 0..<count {
        Job<Void> { controller in
            use(index)
            controller.finish()
        }.perform(on: queue) { _ in }
    }
    printBytesPerJob(since: before)
case "pending-jobkit-repeated":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let job = Job<Void> { $0.finish() }
    let resultQueue = DispatchQueue.global()
    let before = peakResidentBytes()
    for _ in 0..<count { job.perform(on: queue, resultQueue: resultQueue) { _ in } }
    printBytesPerJob(since: before)
case "pending-member-jobkit":
    let release = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let before = peakResidentBytes()
    var jobs = distinctJobs(count)
    jobs[0] = Job<Void> { controller in
        started.signal()
        release.wait()
        controller.finish()
    }
    Job.group(jobs, maxConcurrent: 1).perform(resultQueue: .global()) { _ in done.signal() }
    jobs = []
    started.wait()
    printBytesPerJob(since: before)
case "pending-member-seed":
    let release = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let before = peakResidentBytes()
    var tasks = distinctSeedTasks(count)
    tasks[0] = SeedTask { controller in
        started.signal()
        release.wait()
        controller.finish()
    }
    SeedTask.sequence(tasks).perform { _ in done.signal() }
    tasks = []
    started.wait()
    printBytesPerJob(since: before)
default:
    FileHandle.standardError.write(Data("unknown workload \(arguments[0])\n".utf8))
    exit(64)
}
if arguments.count == 3 {
    print((DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1_000)
}

/// Signals `released` when it is released; the last unit of a workload holds it.
final class ReleaseSignal: Sendable {
    deinit { released.signal() }
}

/// `count` distinct jobs, each a closure capturing its index (the last also the `ReleaseSignal`). Made
/// outside the top-level code, whose closures are main-actor isolated and would each pay an isolation
/// check per call (about 220 instructions) that the raw GCD loop does not.
func distinctJobs(_ count: Int) -> [Job<Void>] {
    let signal = ReleaseSignal()
    return (0..<count).map { index in
        guard index < count - 1 else {
            return Job<Void> { controller in
                withExtendedLifetime(signal) { use(index) }
                controller.finish()
            }
        }
        return Job<Void> { controller in
            use(index)
            controller.finish()
        }
    }
}

/// One job value `count - 1` times, then a last one that holds the `ReleaseSignal`.
func repeatedJobs(_ count: Int) -> [Job<Void>] {
    let signal = ReleaseSignal()
    return Array(repeating: Job<Void> { $0.finish() }, count: count - 1) + [
        Job<Void> { controller in
            withExtendedLifetime(signal) {}
            controller.finish()
        }
    ]
}

/// `count` distinct seed tasks, as `distinctJobs`.
func distinctSeedTasks(_ count: Int) -> [SeedTask] {
    let signal = ReleaseSignal()
    return (0..<count).map { index in
        guard index < count - 1 else {
            return SeedTask { controller in
                withExtendedLifetime(signal) { use(index) }
                controller.finish()
            }
        }
        return SeedTask { controller in
            use(index)
            controller.finish()
        }
    }
}

/// The process's peak resident memory so far, in bytes.
func peakResidentBytes() -> Int {
    var usage = rusage()
    #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        return Int(usage.ru_maxrss)
    #else
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int(usage.ru_maxrss) * 1024
    #endif
}

/// Prints the growth of peak resident memory since `before` per job, and exits at once: the pending
/// jobs never run, and an inactive queue must not be released with work in it.
func printBytesPerJob(since before: Int) -> Never {
    print((peakResidentBytes() - before) / count)
    exit(0)
}
