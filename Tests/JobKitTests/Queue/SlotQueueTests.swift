import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct SlotQueueTests {
    @Test func keysComeOutInTheOrderTheyWentIn() {
        var queue = SlotQueue<Int>()
        #expect(queue.isEmpty && queue.popFirst() == nil && queue.first() == nil)
        for key in 0..<5 { queue.append(key, ticket: UInt64(key)) }
        #expect(queue.keys == [0, 1, 2, 3, 4] && queue.count == 5)
        #expect(queue.first()?.key == 0 && queue.first()?.ticket == 0)
        #expect((0..<5).map { _ in queue.popFirst() } == [0, 1, 2, 3, 4])
        #expect(queue.isEmpty && queue.slotCount == 0)
    }

    @Test func aWithdrawnKeyIsSkippedAndAKeyQueuedAgainGoesToTheBack() {
        var queue = SlotQueue<String>()
        queue.append("a", ticket: 1)
        queue.append("b", ticket: 2)
        queue.append("c", ticket: 3)
        #expect(queue.remove("a") && !queue.remove("a") && !queue.remove("zzz"))
        queue.append("b", ticket: 4)
        #expect(queue.keys == ["c", "b"] && queue.count == 2 && queue.contains("b") && !queue.contains("a"))
        #expect(queue.first()?.ticket == 3)
        #expect(queue.popFirst() == "c" && queue.popFirst() == "b" && queue.popFirst() == nil)
    }

    /// A million rounds, on a thread of their own (`offThePool`) rather than the tests' shared pool.
    @Test func churnBehindABlockedHeadLeavesAtMostTwiceTheLiveSlots() async {
        let (worst, first, keys, count) = await offThePool { () -> (Int, Int?, [Int], Int) in
            var queue = SlotQueue<Int>()
            queue.append(-1, ticket: 0)  // the head that never leaves
            var ticket: UInt64 = 0
            var worst = 0  // the most slots beyond the bound, at any step
            for round in 0..<scaledForTheRun(1_000_000) {
                ticket += 1
                queue.append(round % 7, ticket: ticket)
                if round % 2 == 0 { queue.remove(round % 7) }
                worst = max(worst, queue.slotCount - (2 * queue.count + 64))
            }
            return (worst, queue.first()?.key, Array(queue.keys), queue.count)
        }
        #expect(worst <= 0)
        #expect(first == -1)
        #expect(keys.first == -1 && Set(keys.dropFirst()).count == count - 1)
    }

    @Test func emptiedByWithdrawalsItHoldsNoSlots() {
        var queue = SlotQueue<Int>()
        for key in 0..<1_000 { queue.append(key, ticket: UInt64(key)) }
        for key in 0..<1_000 { queue.remove(key) }
        #expect(queue.isEmpty && queue.slotCount == 0 && queue.popFirst() == nil)
    }
}
