import Dispatch
import Foundation
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKit

/// Random compositions of every combinator, run on virtual time, checked against the invariants
/// that hold for any of them.
@Suite struct CompositionPropertyTests {
    /// What one case shares with the jobs it builds.
    final class Case: Sendable {
        let scheduler = TestScheduler()
        let root = Locked<JobHandle?>(nil)
        let violations = Locked<[String]>([])

        func violation(_ text: String) { violations.withLock { $0.append(text) } }
    }

    /// A leaf: finishes or fails at once or at a virtual time, reports progress on the way, or hangs
    /// until cancelled. A leaf that starts after the whole composition ended is a violation.
    func leaf(_ random: inout SplitMix64, in testCase: Case, _ shape: inout String) -> Job<Int> {
        let value = Int.random(in: 0..<100, using: &random)
        let fails = Bool.random(using: &random) && Bool.random(using: &random)
        let delay = [nil, Duration.seconds(1), .seconds(2), .seconds(5)].randomElement(using: &random)!
        let hangs = Int.random(in: 0..<10, using: &random) == 0
        let reports = (0..<Int.random(in: 0...3, using: &random)).map { _ in Double.random(in: 0...1, using: &random) }
        shape += hangs ? "hang" : "\(fails ? "fail" : "ok")@\(delay.map { "\($0.components.seconds)s" } ?? "now")"
        return Job { controller in
            if testCase.root.current?.state.isFinal == true {
                testCase.violation("a leaf started after the root ended")
            }
            for fraction in reports.sorted() { controller.report(progress: fraction) }
            if hangs { return controller.onCancel {} }
            let complete: @Sendable () -> Void = {
                if fails { controller.fail(with: TestError(id: value)) } else { controller.finish(value) }
            }
            guard let delay else { return complete() }
            let timer = testCase.scheduler.schedule(after: delay, complete)
            controller.onCancel { timer.cancel() }
        }
    }

    /// A random composition at most `depth` deep; `shape` receives its description.
    func composition(depth: Int, _ random: inout SplitMix64, in testCase: Case, _ shape: inout String) -> Job<Int> {
        guard depth > 0, Int.random(in: 0..<4, using: &random) != 0 else { return leaf(&random, in: testCase, &shape) }
        func child() -> Job<Int> {
            defer { shape += ")" }
            shape += "("
            return composition(depth: depth - 1, &random, in: testCase, &shape)
        }
        func children() -> [Job<Int>] {
            defer { shape += "]" }
            shape += "["
            return (0..<Int.random(in: 0...3, using: &random)).map { _ in child() }
        }
        let scheduler = testCase.scheduler
        switch Int.random(in: 0..<10, using: &random) {
        case 0:
            shape += "then"
            let next = child()
            return child().then { _ in next }
        case 1:
            shape += "map"
            return child().map { $0 + 1 }
        case 2:
            shape += "recover"
            let fallback = child()
            return child().recover { _ in fallback }
        case 3:
            shape += "retry"
            return child().retry(
                Int.random(in: 0...3, using: &random), backoff: .constant(.seconds(1)), scheduler: scheduler)
        case 4:
            shape += "timeout"
            return child().timeout(.seconds(Int64.random(in: 0...6, using: &random)), scheduler: scheduler)
        case 5:
            shape += "race"
            return .race(children())
        case 6:
            shape += "group"
            let width = [nil, 1, 2].randomElement(using: &random)!
            return Job.group(children().map { $0.asVoid() }, maxConcurrent: width).map { 0 }
        case 7:
            shape += "sequence"
            return Job.sequence(children().map { $0.asVoid() }).map { 1 }
        case 8:
            shape += "settle"
            return Job.settle(children(), maxConcurrent: [nil, 1].randomElement(using: &random)!).map { $0.count }
        default:
            shape += "collect"
            return Job.collect(children()).map { $0.reduce(0, +) }
        }
    }

    /// Runs one case to its end; returns the violations found. Bodies, timers and cancellation all
    /// run on one serial queue, so a case is deterministic: its seed replays it exactly.
    func check(seed: UInt64, queue: DispatchQueue) -> [String] {
        var random = SplitMix64(seed: seed)
        let testCase = Case()
        var shape = ""
        func members() -> [Job<Int>] {
            (0..<Int.random(in: 0...4, using: &random)).map { _ in
                shape += "("
                defer { shape += ")" }
                return composition(depth: Int.random(in: 1...5, using: &random), &random, in: testCase, &shape)
            }
        }
        // At the root too, groups are themselves, not wrapped in a `map`: their progress is a tree of
        // Foundation `Progress` children.
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            shape += "settle"
            return check(Job.settle(members()), seed: seed, &random, testCase, &shape, queue)
        case 1:
            shape += "collect"
            return check(Job.collect(members(), maxConcurrent: 2), seed: seed, &random, testCase, &shape, queue)
        case 2:
            shape += "group"
            return check(Job.group(members().map { $0.asVoid() }), seed: seed, &random, testCase, &shape, queue)
        default:
            let job = composition(depth: Int.random(in: 1...6, using: &random), &random, in: testCase, &shape)
            return check(job, seed: seed, &random, testCase, &shape, queue)
        }
    }

    func check<Value: Sendable>(
        _ job: Job<Value>, seed: UInt64, _ random: inout SplitMix64, _ testCase: Case, _ shape: inout String,
        _ queue: DispatchQueue
    ) -> [String] {
        let cancelAt: Duration? = Bool.random(using: &random) ? .seconds(Int64.random(in: 0...6, using: &random)) : nil
        let deliveries = Locked<[Result<Value, any Error>]>([])
        let fractions = Locked<[Double]>([])

        queue.suspend()  // nothing runs before the handle and its observers are in place
        let handle = job.perform(on: queue, resultQueue: queue) { result in deliveries.withLock { $0.append(result) } }
        testCase.root.withLock { $0 = handle }
        let progress = handle.progress
        handle.onStateChange(on: queue) { state in
            if case .running(let fraction) = state { fractions.withLock { $0.append(fraction) } }
        }
        queue.resume()

        var cancelledWhileRunning = false
        var pendingCancel = cancelAt
        for _ in 0..<1_000 {
            queue.sync {}
            if !deliveries.current.isEmpty { break }
            let next = testCase.scheduler.scheduledDelays.first
            if let cancel = pendingCancel, next.map({ testCase.scheduler.now + $0 >= cancel }) ?? true {
                queue.sync { testCase.scheduler.advance(by: max(cancel - testCase.scheduler.now, .zero)) }
                queue.sync {
                    if deliveries.current.isEmpty, !handle.state.isFinal {
                        cancelledWhileRunning = true
                        handle.cancel()
                    }
                }
                pendingCancel = nil
            } else if let next {
                queue.sync { testCase.scheduler.advance(by: next) }
            } else if deliveries.current.isEmpty {
                // Only hanging leaves are left: end the run the way a user would.
                queue.sync {
                    cancelledWhileRunning = !handle.state.isFinal
                    handle.cancel()
                }
            }
        }
        queue.sync {}

        var violations = testCase.violations.current
        let results = deliveries.current
        guard results.count == 1, let result = results.first else {
            return [shape] + violations + ["\(results.count) completions"]
        }
        let state = handle.state
        switch result {
        case .success:
            if state != .finished { violations.append("success but state \(state)") }
            if progress.fractionCompleted != 1 {
                violations.append("success at progress \(progress.fractionCompleted)")
            }
        case .failure(let error as JobError) where error == .cancelled:
            if state != .cancelled { violations.append("cancelled but state \(state)") }
        case .failure(let error):
            if state != .failed { violations.append("failure but state \(state)") }
            if cancelledWhileRunning { violations.append("cancelled while running, yet failed with \(error)") }
        }
        if cancelledWhileRunning, case .success = result { violations.append("cancelled while running, yet finished") }
        if state == .failed, handle.error == nil { violations.append("failed without an error") }
        let seen = fractions.current
        if seen != seen.sorted() { violations.append("progress went back: \(seen)") }
        if seen.contains(where: { $0 < 0 || $0 > 1 }) { violations.append("progress out of 0...1: \(seen)") }
        guard !violations.isEmpty else { return [] }
        return ["\(shape), cancel at \(cancelAt.map { "\($0)" } ?? "never")"] + violations
    }

    @Test func randomCompositionsKeepEveryInvariant() {
        let cases = Int(ProcessInfo.processInfo.environment["JOBKIT_PROPERTY_CASES"] ?? "") ?? 10_000
        let base =
            UInt64(ProcessInfo.processInfo.environment["JOBKIT_PROPERTY_SEED"] ?? "")
            ?? UInt64.random(in: 0...UInt64.max >> 1)
        let queue = DispatchQueue(label: "compositions")
        var failures = 0
        for index in 0..<UInt64(cases) {
            let seed = base &+ index
            let violations = check(seed: seed, queue: queue)
            if !violations.isEmpty {
                failures += 1
                Issue.record(
                    "seed \(seed) (replay: JOBKIT_PROPERTY_SEED=\(seed) JOBKIT_PROPERTY_CASES=1): \(violations)")
                if failures == 5 { break }
            }
        }
    }
}
