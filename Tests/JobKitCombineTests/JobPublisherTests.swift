import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitCombine

#if canImport(Combine)
    import Combine
#else
    import OpenCombine
#endif

@Suite struct JobPublisherTests {
    /// A job that counts its runs and finishes with the count.
    private func countingJob(_ runs: Locked<Int>) -> Job<Int> {
        Job { controller in
            controller.finish(
                runs.withLock {
                    $0 += 1; return $0
                })
        }
    }

    @Test func nothingRunsBeforeASubscriptionAsksForAValue() async {
        let runs = Locked(0)
        let queue = DispatchQueue(label: "test.bodies")
        let publisher = countingJob(runs).publisher(on: queue, resultQueue: DispatchQueue(label: "test.results"))
        queue.sync {}
        #expect(runs.current == 0, "making the publisher runs nothing")
        let recorder = Recorder<Int, any Error>(demand: .none)
        publisher.subscribe(recorder)
        queue.sync {}
        #expect(runs.current == 0, "a subscription without demand runs nothing")
        recorder.request(.max(1))
        await recorder.wait(for: 2)
        #expect(runs.current == 1)
        #expect(recorder.values == [1])
        #expect(recorder.received.last?.isCompletion == true)
    }

    @Test func eachSubscriptionPerformsTheJobOnce() async {
        let runs = Locked(0)
        let publisher = countingJob(runs).publisher(resultQueue: DispatchQueue(label: "test.results"))
        let first = Recorder<Int, any Error>()
        let second = Recorder<Int, any Error>()
        publisher.subscribe(first)
        publisher.subscribe(second)
        await first.wait(for: 2)
        await second.wait(for: 2)
        #expect(runs.current == 2)
        #expect(Set(first.values + second.values) == [1, 2])
        if case .finished = first.received.last {} else { Issue.record("first: \(first.received)") }
        if case .finished = second.received.last {} else { Issue.record("second: \(second.received)") }
    }

    @Test func valueAndCompletionArriveOnTheResultQueue() async {
        let results = TaggedQueue("test.results", attributes: .concurrent)
        let recorder = Recorder<Int, any Error>(queue: results)
        Job.just(7).publisher(resultQueue: results.queue).subscribe(recorder)
        await recorder.wait(for: 2)
        #expect(recorder.values == [7])
        #expect(recorder.received.count == 2)
        #expect(recorder.received.allSatisfy { $0.wasOnQueue })
    }

    @Test func aSubscriberAskingForNothingGetsTheValueOnlyOnceItAsks() async {
        let queue = DispatchQueue(label: "test.bodies")
        let recorder = Recorder<String, any Error>(demand: .none)
        Job.just("ok").publisher(on: queue, resultQueue: queue).subscribe(recorder)
        recorder.request(.none)
        queue.sync {}
        queue.sync {}
        #expect(recorder.received.isEmpty, "no value without demand")
        recorder.request(.max(1))
        await recorder.wait(for: 2)
        #expect(recorder.values == ["ok"])
        if case .finished = recorder.received.last {} else { Issue.record("\(recorder.received)") }
    }

    @Test func aFailedRunPublishesItsError() async {
        let results = TaggedQueue("test.results")
        let recorder = Recorder<Int, any Error>(queue: results)
        Job<Int>.failure(TestError(id: 3)).publisher(resultQueue: results.queue).subscribe(recorder)
        await recorder.wait(for: 1)
        #expect(recorder.received.count == 1)
        guard case .failure(let error, let onQueue) = recorder.received.first else {
            Issue.record("expected a failure: \(recorder.received)")
            return
        }
        #expect(error as? TestError == TestError(id: 3))
        #expect(onQueue)
    }

    @Test func cancellingTheSubscriptionMidRunCancelsTheBody() async throws {
        let started = Signal("the body started")
        let cancelHandlerRan = Signal("the body's onCancel handler")
        // A body that never finishes by itself: only the cancellation ends its run. (A timer that
        // finished it after a while made the test wait for the wrong thing: under a full parallel
        // run the test could resume after the timer, see the value, and wait for a cancel forever.)
        let job = Job<Int> { controller in
            controller.onCancel { cancelHandlerRan.fire() }
            started.fire()
        }
        let results = DispatchQueue(label: "test.results")
        let recorder = Recorder<Int, any Error>()
        job.publisher(resultQueue: results).subscribe(recorder)
        try await started.wait()
        recorder.cancel()
        try await cancelHandlerRan.wait()
        results.sync {}
        results.sync {}
        #expect(recorder.received.isEmpty, "nothing is sent after a cancellation, not even JobError.cancelled")
    }

    @Test func cancellingBeforeAnyDemandRunsNothingAndReleasesTheSubscriber() async {
        let runs = Locked(0)
        let queue = DispatchQueue(label: "test.bodies")
        weak var released: Recorder<Int, any Error>?
        do {
            let recorder = Recorder<Int, any Error>(demand: .none)
            released = recorder
            countingJob(runs).publisher(on: queue, resultQueue: queue).subscribe(recorder)
            recorder.cancel()
            recorder.request(.max(1))
        }
        queue.sync {}
        #expect(runs.current == 0)
        #expect(released == nil)
    }

    /// `JOBKIT_COMBINE_SUBSCRIPTIONS` overrides the 1,000,000 subscriptions (the sanitized CI run
    /// uses fewer).
    private static let subscriptionCount =
        ProcessInfo.processInfo.environment["JOBKIT_COMBINE_SUBSCRIPTIONS"].flatMap(Int.init).map { max($0, 1) }
        ?? 1_000_000

    @Test func aMillionSubscriptionsLeaveNothingBehind() async {
        let queue = DispatchQueue(label: "test.bodies")
        let results = DispatchQueue(label: "test.results")
        let publisher = Job.just(1).publisher(on: queue, resultQueue: results)
        let delivered = Locked(0)
        let batch = 10_000
        var remaining = Self.subscriptionCount
        var probes: [WeakProbe] = []
        while remaining > 0 {
            let count = min(batch, remaining)
            remaining -= count
            // Every tenth is cancelled: before its demand, or while its run is in flight.
            let ended: Void? = await awaitCallback("a batch of \(count) subscriptions to end") {
                (continuation: Resumer<Void>) in
                let left = Locked(count)
                let done: @Sendable () -> Void = {
                    if left.withLock({
                        $0 -= 1; return $0
                    }) == 0 {
                        continuation.resume()
                    }
                }
                for index in 0..<count {
                    let sink = CountingSink(delivered: delivered, done: done)
                    if index == 0 { probes.append(WeakProbe(sink)) }
                    defer { if index == 0, let subscription = sink.subscriptionObject { probes.append(subscription) } }
                    switch index % 20 {
                    case 3:
                        publisher.subscribe(sink.cancellingAtOnce())
                        sink.end()
                    case 13:
                        publisher.subscribe(sink)
                        sink.cancel()
                        results.async { sink.end() }
                    default:
                        publisher.subscribe(sink)
                    }
                }
            }
            if ended == nil { return }
        }
        // Every result delivery queued so far has run: the subscriptions have ended.
        results.sync {}
        queue.sync {}
        results.sync {}
        #expect(
            probes.count == 2 * ((Self.subscriptionCount + batch - 1) / batch),
            "a subscriber and its subscription per batch")
        #expect(probes.allSatisfy { $0.object == nil }, "every subscriber and subscription was released")
        #expect(delivered.current <= Self.subscriptionCount)
        #expect(delivered.current >= Self.subscriptionCount * 18 / 20)
    }
}

/// Holds an object weakly.
final class WeakProbe: @unchecked Sendable {
    // Safety: written once, in `init`; a weak reference is read atomically.
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}

/// A subscriber that asks for everything and counts the values.
// Safety: `subscription` is guarded by `lock`; `cancelsAtOnce` and `subscriptionObject` are written
// on the subscribing thread, during `subscribe`, and read there; the rest is immutable.
final class CountingSink: Subscriber, @unchecked Sendable {
    typealias Input = Int
    typealias Failure = any Error

    private let lock = NSLockedSubscription()
    private let delivered: Locked<Int>
    private let done: @Sendable () -> Void
    private let ended = Locked(false)
    private var cancelsAtOnce = false
    /// The subscription it received, held weakly.
    private(set) var subscriptionObject: WeakProbe?

    init(delivered: Locked<Int>, done: @escaping @Sendable () -> Void) {
        self.delivered = delivered
        self.done = done
    }

    func cancellingAtOnce() -> Self {
        cancelsAtOnce = true
        return self
    }

    func receive(subscription: any Subscription) {
        subscriptionObject = WeakProbe(subscription as AnyObject)
        if cancelsAtOnce {
            subscription.cancel()
            return
        }
        lock.set(subscription)
        subscription.request(.unlimited)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
        delivered.withLock { $0 += input }
        return .none
    }

    func receive(completion: Subscribers.Completion<any Error>) {
        lock.set(nil)
        end()
    }

    func cancel() { lock.take()?.cancel() }

    /// Counts this subscriber as done, once (a cancelled one may have received its value first).
    func end() {
        if !ended.withLock({ $0.exchange(true) }) { done() }
    }
}

extension Bool {
    /// Sets the value and returns the one before.
    mutating func exchange(_ new: Bool) -> Bool {
        defer { self = new }
        return self
    }
}

/// A subscription behind a lock.
// Safety: `subscription` is only reached with `lock` held.
final class NSLockedSubscription: @unchecked Sendable {
    private let lock = NSLock()
    private var subscription: (any Subscription)?

    func set(_ new: (any Subscription)?) { lock.withLock { subscription = new } }
    func take() -> (any Subscription)? { lock.withLock { subscription.take() } }
}
