import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The broadcaster with real continuations: waiting consumers are resumed by deliveries, by the end
/// and by cancellation, and a released subscription removes its consumer.
@Suite struct UpdateBroadcasterTests {
    /// A broadcaster with a lock of its own (a manager's is behind the manager's lock).
    typealias Standalone = UpdateBroadcastStateMachine<CheckedContinuation<DownloadManager.Update?, Never>>

    let start = DownloadManager.Update(events: [], items: [], totals: .init())
    let cut = UpdateCut(deliveriesBefore: 0, eventsBefore: 0)

    func delivery(_ number: UInt64, final: Bool = false) -> UpdateDelivery {
        UpdateDelivery(
            update: DownloadManager.Update(events: [], items: [], totals: .init(received: Int64(number))),
            number: number, firstEvent: 0, isFinal: final)
    }

    @Test func aWaitingConsumerIsResumedByADeliveryThenByTheEnd() async {
        let broadcaster = UpdateBroadcaster<Standalone>()
        let subscription = UpdateSubscription(
            broadcaster: broadcaster, id: broadcaster.subscribe(initial: start, after: cut))
        let first = await subscription.next()
        #expect(first?.totals.received == 0)
        let reader = Task { await subscription.next() }
        broadcaster.deliver(delivery(1))
        #expect(await reader.value?.totals.received == 1)
        let last = Task { await subscription.next() }
        broadcaster.deliver(delivery(2, final: true))
        #expect(await last.value?.totals.received == 2)
        #expect(await subscription.next() == nil)
        #expect(broadcaster.consumerCount == 0)
    }

    @Test func cancellingTheTaskAtAnyPointEndsTheIteration() async {
        let broadcaster = UpdateBroadcaster<Standalone>()
        for round in 0..<200 {
            let subscription = UpdateSubscription(
                broadcaster: broadcaster, id: broadcaster.subscribe(initial: start, after: cut))
            let reader = Task {
                var count = 0
                while await subscription.next() != nil { count += 1 }
                return count
            }
            // Deliveries race the cancel: before, while and after the reader waits.
            for number in 0..<(round % 4) { broadcaster.deliver(delivery(UInt64(round * 10 + number + 1))) }
            if round % 3 == 0 { await Task.yield() }
            reader.cancel()
            _ = await reader.value
            #expect(await subscription.next() == nil, "a cancelled consumer stays ended")
        }
        #expect(broadcaster.consumerCount == 0)
    }

    @Test func releasingTheSubscriptionRemovesTheConsumer() {
        let broadcaster = UpdateBroadcaster<Standalone>()
        weak var released: UpdateSubscription<Standalone>?
        do {
            let subscription = UpdateSubscription(
                broadcaster: broadcaster, id: broadcaster.subscribe(initial: start, after: cut))
            released = subscription
            broadcaster.deliver(delivery(1))
            #expect(broadcaster.consumerCount == 1)
        }
        #expect(released == nil)
        #expect(broadcaster.consumerCount == 0)
    }

    @Test func aThousandWaitingConsumersAllEnd() async {
        let broadcaster = UpdateBroadcaster<Standalone>()
        let counts = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<1_000 {
                let subscription = UpdateSubscription(
                    broadcaster: broadcaster, id: broadcaster.subscribe(initial: start, after: cut))
                group.addTask {
                    var count = 0
                    while await subscription.next() != nil { count += 1 }
                    return count
                }
            }
            broadcaster.deliver(delivery(1, final: true))
            return await group.reduce(into: []) { $0.append($1) }
        }
        // Each got its snapshot and the final delivery (merged into it when it had not taken it yet).
        #expect(counts.count == 1_000 && counts.allSatisfy { (1...2).contains($0) })
        #expect(broadcaster.consumerCount == 0)
    }
}
