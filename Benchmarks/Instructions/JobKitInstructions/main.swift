// Runs one workload once, for `Benchmarks/instructions.sh` to count its instructions with callgrind.
//
//   JobKitInstructions WORKLOAD N
//
// Workloads: fanout-gcd, fanout-jobkit, fanout-seed, fanout-taskgroup (N no-op jobs at once, then
// wait), sequence-gcd, sequence-jobkit, sequence-seed (N no-op jobs one after another). The script
// runs each at two sizes and reports the marginal cost per job, so start-up costs cancel out.
//
// Memory workloads (`Benchmarks/pending-memory.sh`) print bytes per pending job — the growth of peak
// resident memory while N jobs wait, divided by N: pending-gcd, pending-seed, pending-jobkit (N
// performs queued on an inactive queue), pending-member-jobkit (a group of N members, one at a time,
// whose first member blocks — the array of jobs included), pending-member-seed (the same through the
// seed's sequence).
import Dispatch
import Foundation
import JobKit
import SeedDesign

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let count = Int(arguments.last!) else {
    FileHandle.standardError.write(Data("usage: JobKitInstructions WORKLOAD N\n".utf8))
    exit(64)
}

let done = DispatchSemaphore(value: 0)
switch arguments.first! {
case "fanout-gcd":
    let group = DispatchGroup()
    for _ in 0..<count { DispatchQueue.global().async(group: group) {} }
    group.wait()
case "fanout-jobkit":
    Job.group(Array(repeating: Job<Void> { $0.finish() }, count: count))
        .perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
case "fanout-seed":
    SeedTask.group(Array(repeating: SeedTask { $0.finish() }, count: count)).perform { _ in done.signal() }
    done.wait()
case "fanout-taskgroup":
    Task.detached {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask {} }
        }
        done.signal()
    }
    done.wait()
case "sequence-gcd":
    @Sendable func step(_ index: Int) {
        guard index < count else {
            done.signal()
            return
        }
        DispatchQueue.global().async { step(index + 1) }
    }
    step(0)
    done.wait()
case "sequence-jobkit":
    Job.sequence(Array(repeating: Job<Void> { $0.finish() }, count: count))
        .perform(resultQueue: .global()) { _ in done.signal() }
    done.wait()
case "sequence-seed":
    SeedTask.sequence(Array(repeating: SeedTask { $0.finish() }, count: count)).perform { _ in done.signal() }
    done.wait()
case "pending-gcd":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let before = peakResidentBytes()
    for _ in 0..<count { queue.async {} }
    printBytesPerJob(since: before)
case "pending-seed":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let task = SeedTask { $0.finish() }
    let before = peakResidentBytes()
    for _ in 0..<count { task.perform(on: queue) { _ in } }
    printBytesPerJob(since: before)
case "pending-jobkit":
    let queue = DispatchQueue(label: "pending", attributes: .initiallyInactive)
    let job = Job<Void> { $0.finish() }
    // Made once, like `.main`: on Linux each `DispatchQueue.global()` call makes a new 24-byte wrapper,
    // which would be counted against every pending job.
    let resultQueue = DispatchQueue.global()
    let before = peakResidentBytes()
    for _ in 0..<count { job.perform(on: queue, resultQueue: resultQueue) { _ in } }
    printBytesPerJob(since: before)
case "pending-member-jobkit":
    let release = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let before = peakResidentBytes()
    var jobs = Array(repeating: Job<Void> { $0.finish() }, count: count)
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
    var tasks = Array(repeating: SeedTask { $0.finish() }, count: count)
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
    FileHandle.standardError.write(Data("unknown workload \(arguments.first!)\n".utf8))
    exit(64)
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
