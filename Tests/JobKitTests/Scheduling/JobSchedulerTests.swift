import Dispatch
import Foundation
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKit

@Suite struct JobSchedulerTests {
    @Test func aCancelledDispatchTimerReleasesItsActionAtOnce() async throws {
        let counter = LiveCounter()
        let scheduler = DispatchScheduler()
        var actions: [ScheduledAction] = []
        for _ in 0..<1_000 {
            let token = counter.make()
            actions.append(scheduler.schedule(after: .seconds(3600)) { withExtendedLifetime(token) {} })
        }
        #expect(counter.live == 1_000)
        for action in actions { action.cancel() }
        actions = []
        // GCD releases a cancelled source's handler on its queue, just after: wait for that, not an hour.
        await eventually("every cancelled timer released its action") { counter.live == 0 }
    }

    @Test func aFiredDispatchTimerRunsOnceAndReleasesItsAction() async {
        let counter = LiveCounter()
        let runs = Locked(0)
        let fired = OutcomeBox<Void>()
        do {
            let token = counter.make()
            let action = DispatchScheduler().schedule(after: .milliseconds(1)) {
                withExtendedLifetime(token) {}
                runs.withLock { $0 += 1 }
                fired.set(.success(()))
            }
            _ = await fired.result
            action.cancel()  // after it ran: nothing happens
        }
        DispatchQueue.global().sync(flags: .barrier) {}
        #expect(runs.current == 1)
    }

    @Test(arguments: [
        Duration.seconds(Int64.max), .seconds(9_223_372_037), .nanoseconds(Int64.max), .seconds(1e18),
    ])
    func hugeDelaysNeverTrapAndNeverFire(delay: Duration) async throws {
        let fired = Locked(false)
        let action = DispatchScheduler().schedule(after: delay) { fired.withLock { $0 = true } }
        action.cancel()
        #expect(!fired.current)
        #expect(DispatchTime.now().adding(delay) == .distantFuture)
        let (handle, outcome) = Job<Int>.just(1).timeout(delay).started()
        #expect(try await outcome.result.get() == 1)
        #expect(handle.state == .finished)
    }

    @Test func negativeAndZeroDelaysFireAtOnce() async {
        for delay in [Duration.zero, .seconds(-5), .seconds(Int64.min)] {
            let fired = OutcomeBox<Void>()
            DispatchScheduler().schedule(after: delay) { fired.set(.success(())) }
            _ = await fired.result
        }
        #expect(Duration.seconds(-1).saturatingNanoseconds == 0)
        #expect(Duration.seconds(Int64.max).saturatingNanoseconds == .max)
        #expect(Duration.milliseconds(1500).saturatingNanoseconds == 1_500_000_000)
    }

    @Test func theTestSchedulerSaturatesInsteadOfOverflowing() {
        let scheduler = TestScheduler()
        let fired = Locked(0)
        scheduler.schedule(after: .seconds(Int64.max)) { fired.withLock { $0 += 1 } }
        scheduler.advance(by: .seconds(Int64.max))
        scheduler.advance(by: .seconds(Int64.max))
        scheduler.run()
        #expect(fired.current == 1)
    }

    @Test func backoffNeverTrapsOnOddNumbers() {
        let odd: [Backoff] = [
            .exponential(initial: .seconds(1), multiplier: .nan, maximum: .seconds(10)),
            .exponential(initial: .seconds(1), multiplier: .infinity, maximum: .seconds(Int64.max)),
            .exponential(initial: .seconds(1), multiplier: -3, maximum: .seconds(10), jitter: .nan),
            .exponential(initial: .seconds(-5), maximum: .seconds(-1), jitter: 5),
            .exponential(initial: .seconds(Int64.max), multiplier: 1e300, maximum: .seconds(Int64.max)),
        ]
        for backoff in odd {
            for retry in [Int.min, -1, 0, 1, 2, 60, 10_000] {
                for random in [0, 0.5, 1, .nan] {
                    let delay = backoff.delay(beforeRetry: retry, unitRandom: random)
                    #expect(delay >= .zero)
                    _ = DispatchTime.now().adding(delay)
                }
            }
        }
    }
}
