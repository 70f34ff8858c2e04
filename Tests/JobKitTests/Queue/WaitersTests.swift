import JobKitTestSupport
import Testing

@testable import JobKit

@Suite struct WaitersTests {
    /// Runs `body` with a continuation that `Waiters` can keep, then resumes it so the test ends.
    private func withContinuation(_ body: (CheckedContinuation<Int, Never>) -> Void) async -> Int {
        await withCheckedContinuation { body($0) }
    }

    @Test func waitersAreKeptUntilThePointIsReachedAndResumedOnce() async {
        var waiters = Waiters<Int>()
        let first = waiters.makeToken()
        let second = waiters.makeToken()
        #expect(first != second)
        let value = await withContinuation { continuation in
            let waits = waiters.wait(first, continuation, isReached: false)
            #expect(waits)
            #expect(waiters.count == 1)
            let taken = waiters.takeAll()
            #expect(taken.count == 1 && waiters.count == 0 && waiters.takeAll().isEmpty)
            for waiter in taken { waiter.resume(returning: 7) }
        }
        #expect(value == 7)
        let resumed = waiters.cancel(first)
        #expect(resumed == nil, "a resumed token is forgotten")
        let late = await withContinuation { continuation in
            let waits = waiters.wait(second, continuation, isReached: true)
            #expect(!waits, "reached already: resume at once")
            continuation.resume(returning: 8)
        }
        #expect(late == 8 && waiters.count == 0)
    }

    @Test func aCancelBeforeTheWaitMakesTheWaitReturnAtOnce() async {
        var waiters = Waiters<Int>()
        let token = waiters.makeToken()
        let early = waiters.cancel(token)
        #expect(early == nil)
        let value = await withContinuation { continuation in
            let waits = waiters.wait(token, continuation, isReached: false)
            #expect(!waits, "closed by the cancel")
            continuation.resume(returning: 1)
        }
        #expect(value == 1 && waiters.count == 0)
    }

    @Test func aCancelDuringTheWaitHandsBackItsContinuationOnly() async {
        let waiters = Locked(Waiters<Int>())
        let staying = waiters.withLock { $0.makeToken() }
        let leaving = waiters.withLock { $0.makeToken() }
        async let stayed = withCheckedContinuation { continuation in
            #expect(waiters.withLock { $0.wait(staying, continuation, isReached: false) })
        }
        async let left = withCheckedContinuation { continuation in
            #expect(waiters.withLock { $0.wait(leaving, continuation, isReached: false) })
        }
        while waiters.withLock({ $0.count }) < 2 { await Task.yield() }
        let cancelled = waiters.withLock { $0.cancel(leaving) }
        #expect(cancelled != nil && waiters.withLock { $0.count } == 1)
        cancelled?.resume(returning: 1)
        #expect(waiters.withLock { $0.cancel(leaving) } == nil, "a second cancel finds nothing")
        for waiter in waiters.withLock({ $0.takeAll() }) { waiter.resume(returning: 2) }
        #expect(await left == 1)
        #expect(await stayed == 2)
    }
}
