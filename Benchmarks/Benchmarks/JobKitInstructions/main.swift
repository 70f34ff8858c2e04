// Runs one workload once, for `Benchmarks/instructions.sh` to count its instructions with callgrind.
//
//   JobKitInstructions WORKLOAD N
//
// Workloads: fanout-gcd, fanout-jobkit, fanout-seed, fanout-taskgroup (N no-op jobs at once, then
// wait), sequence-gcd, sequence-jobkit, sequence-seed (N no-op jobs one after another). The script
// runs each at two sizes and reports the marginal cost per job, so start-up costs cancel out.
import Dispatch
import Foundation
import JobKit

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
default:
    FileHandle.standardError.write(Data("unknown workload \(arguments.first!)\n".utf8))
    exit(64)
}
