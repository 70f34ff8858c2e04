import Dispatch
import Foundation
import JobKitTestSupport
import Testing

@testable import JobKit

/// Counts the live instances of something, and the most that were ever alive at once.
final class LiveCounter: Sendable {
    private let counts = Locked((live: 0, peak: 0, made: 0))

    /// An object that counts as live until it is released.
    final class Token: Sendable {
        let counter: LiveCounter
        init(_ counter: LiveCounter) {
            self.counter = counter
            counter.counts.withLock {
                $0.live += 1; $0.made += 1; $0.peak = max($0.peak, $0.live)
            }
        }
        deinit { counter.counts.withLock { $0.live -= 1 } }
    }

    func make() -> Token { Token(self) }
    var live: Int { counts.current.live }
    var peak: Int { counts.current.peak }
    var made: Int { counts.current.made }
}

@Suite struct CompletionTrampolineTests {
    /// A million levels (fewer in CI's sanitized run: `scaledForTheRun`).
    static let depth = scaledForTheRun(1_000_000)

    /// A paging loop written the ordinary way: each level makes the next with `then`.
    func page(_ level: Int, to depth: Int, counter: LiveCounter) -> Job<Int> {
        let token = counter.make()
        return Job.just(level).then { level in
            withExtendedLifetime(token) {}
            return level == depth ? .just(level) : page(level + 1, to: depth, counter: counter)
        }
    }

    @Test func aMillionLevelRecursiveThenRunsAndHoldsOneLevelAtATime() async throws {
        let counter = LiveCounter()
        let value = try await page(1, to: Self.depth, counter: counter).outcome(timeout: millionLevelDeadline).get()
        #expect(value == Self.depth)
        #expect(counter.made == Self.depth)
        // Finished levels are released as the loop goes: memory follows the live path, not the depth.
        #expect(counter.peak < 100, "peak live levels \(counter.peak)")
    }

    func attempt(_ number: Int, succeedingAt last: Int, counter: LiveCounter) -> Job<Int> {
        let token = counter.make()
        let job: Job<Int> = number == last ? .just(number) : .failure(TestError(id: number))
        return job.recover { _ in
            withExtendedLifetime(token) {}
            return attempt(number + 1, succeedingAt: last, counter: counter)
        }
    }

    @Test func aMillionLevelRecursiveRecoverRunsAndHoldsOneLevelAtATime() async throws {
        let counter = LiveCounter()
        let value = try await attempt(1, succeedingAt: Self.depth, counter: counter).outcome(
            timeout: millionLevelDeadline
        ).get()
        #expect(value == Self.depth)
        #expect(counter.peak < 100, "peak live levels \(counter.peak)")
    }

    /// Not a tail call (a `map` follows each level), so every level stays a child run: completions
    /// cascade a hundred thousand levels up — iteratively, not in as many stack frames.
    func nested(_ level: Int, to depth: Int) -> Job<Int> {
        Job.just(level).then { level in level == depth ? .just(0) : nested(level + 1, to: depth) }.map { $0 + 1 }
    }

    @Test func aDeepNonTailRecursionCompletesWithoutGrowingTheStack() async throws {
        let depth = scaledForTheRun(100_000)
        #expect(try await nested(1, to: depth).outcome(timeout: millionLevelDeadline).get() == depth)
    }

    @Test func cancellingADeepNonTailRecursionUnwindsEveryLevel() async throws {
        let depth = scaledForTheRun(50_000)
        let reached = Locked(0)
        let cancelled = Locked(0)
        @Sendable func level(_ number: Int) -> Job<Int> {
            Job.just(number).then { number -> Job<Int> in
                guard number < depth else {
                    return Job { controller in
                        controller.onCancel { cancelled.withLock { $0 += 1 } }
                        reached.withLock { $0 = number }
                    }
                }
                return level(number + 1)
            }.map { $0 }
        }
        let handle = Locked<JobHandle?>(nil)
        let outcome = Task { () -> Result<Int, any Error>? in
            await awaitCallback("the run's handler", timeout: millionLevelDeadline) { continuation in
                handle.withLock {
                    $0 = level(1).perform(resultQueue: resultQueue) { continuation.resume(returning: $0) }
                }
            }
        }
        await eventually("the innermost body started", timeout: millionLevelDeadline) { reached.current >= depth }
        handle.current?.cancel()
        #expect(isCancelled(await outcome.value))
        #expect(cancelled.current == 1, "the innermost body's onCancel ran once")
    }

    @Test func aCompletionInsideACompletionRunsAfterItInOrder() {
        var order: [String] = []
        CompletionTrampoline.deliver("outer") { value in
            order.append(value + " start")
            CompletionTrampoline.deliver("inner 1") { order.append($0) }
            CompletionTrampoline.deliver("inner 2") { value in
                order.append(value)
                CompletionTrampoline.deliver("innermost") { order.append($0) }
            }
            order.append(value + " end")
        }
        #expect(order == ["outer start", "outer end", "inner 1", "inner 2", "innermost"])
        #expect(!CompletionTrampoline.isDraining)
    }

    /// Progress forwarded up a composition 20,000 levels deep: a loop, not 20,000 frames.
    @Test func progressForwardedUpADeepCompositionDoesNotGrowTheStack() async throws {
        let leaf = Job<Int> { controller in
            controller.report(progress: 0.5)
            controller.finish(0)
        }
        @Sendable func level(_ n: Int) -> Job<Int> {
            Job<Int>.failure(TestError(id: n)).recover { _ in n == 0 ? leaf : level(n - 1).mapError { $0 } }
        }
        #expect(try await level(scaledForTheRun(20_000)).outcome().get() == 0)
    }

    /// The losers of a race are composites: the onCancel of their innermost jobs has run before the
    /// race's next step sees the outcome.
    @Test func nestedLosersAreCancelledBeforeTheRaceGoesOn() async throws {
        for iteration in 0..<300 {
            let cancelled = Locked(false)
            let started = DispatchSemaphore(value: 0)
            let loser = Job<Int> { controller in
                controller.onCancel { cancelled.withLock { $0 = true } }
                started.signal()
            }.map { $0 }.mapError { $0 }
            let winner = Job<Int> { controller in
                _ = wait(for: started)
                controller.finish(1)
            }
            let sawCancel = try await Job.race([winner, loser]).map { _ in cancelled.current }.outcome().get()
            #expect(sawCancel, "iteration \(iteration)")
            if !sawCancel { break }
        }
    }

    /// `cancel()` from inside a `map` closure (a completion context) has its effects at once.
    @Test func cancelInsideACompletionTakesEffectBeforeItReturns() async throws {
        let jobQueue = JobQueue<Int>(maxConcurrent: 1, resultQueue: resultQueue)
        try jobQueue.add(Job<Void> { _ in }, id: 5)
        let cancelledLeaf = Locked(false)
        let started = DispatchSemaphore(value: 0)
        let other = Job<Int> { controller in
            controller.onCancel { cancelledLeaf.withLock { $0 = true } }
            started.signal()
        }.map { $0 }.started()
        _ = await started.waitOffThePool("the body started")
        let seen = try await Job.just(1).map { _ -> [Bool] in
            jobQueue.cancel(id: 5)
            let readded = (try? jobQueue.add(.empty, id: 5)) != nil
            other.handle.cancel()
            return [readded, cancelledLeaf.current]
        }.outcome().get()
        #expect(seen == [true, true])
        await jobQueue.waitUntilIdle()
    }

    /// A job wrapped a million times over, built eagerly in a loop, is released in constant stack.
    /// The loop runs on a thread of its own (`offThePool`): seven of them on the tests' shared pool
    /// would hold its two threads for as long as they run.
    @Test(arguments: ["mapError", "retry", "timeout", "race", "recover", "group", "named then"])
    func aJobNestedAMillionLevelsDeepIsReleasedWithoutGrowingTheStack(combinator: String) async {
        let name = await offThePool { () -> String? in
            var job = Job<Int>.just(0)
            for _ in 0..<scaledForTheRun(1_000_000) {
                switch combinator {
                case "mapError": job = job.mapError { $0 }
                case "retry": job = job.retry(1)
                case "timeout": job = job.timeout(.seconds(1))
                case "race": job = .race([job])
                case "recover": job = job.recover { _ in .just(1) }
                case "group": job = Job.collect([job]).map { $0[0] }
                default: job = job.named("level").then { .just($0) }
                }
            }
            job = .just(1)
            return job.name
        }
        #expect(name == nil)
    }

    @Test func aJobNestedDeeplyRunsAndIsReleased() async throws {
        var job = Job<Int>.just(7)
        for level in 0..<scaledForTheRun(50_000) { job = level.isMultiple(of: 2) ? job.mapError { $0 } : .race([job]) }
        #expect(try await job.outcome().get() == 7)
    }
}
