import JobKit
import JobKitTestSupport
import JobKitTesting
import Testing

@testable import JobKitNetworking

/// `BandwidthLimiter` on a `TestScheduler`: readers that read a chunk whenever the limiter lets them.
@Suite struct BandwidthLimiterTests {
    private static let chunk = 16 << 10

    /// Simulated transfers: each reads a chunk, tells the limiter, and reads the next at once or
    /// when resumed.
    private final class Readers: Sendable {
        let limiter: BandwidthLimiter<Int>
        let read = Locked<[Int: Int]>([:])
        let stopped = Locked<Set<Int>>([])

        init(_ limiter: BandwidthLimiter<Int>) { self.limiter = limiter }

        func start(_ key: Int) {
            while !stopped.current.contains(key) {
                read.withLock { $0[key, default: 0] += BandwidthLimiterTests.chunk }
                let wait = limiter.consumed(BandwidthLimiterTests.chunk, by: key) { [self] in start(key) }
                if wait != nil { return }
            }
        }

        func bytes(_ key: Int) -> Int { read.current[key] ?? 0 }
    }

    @Test func withoutLimitsNothingWaits() {
        let scheduler = TestScheduler()
        let limiter = BandwidthLimiter<Int>(overall: nil, scheduler: scheduler)
        #expect(limiter.consumed(1 << 30, by: 1) { Issue.record("no wait to end") } == nil)
        #expect(scheduler.scheduledCount == 0)
    }

    @Test func aReaderWaitsForTheSchedulersTimeNotTheWallClocks() {
        let scheduler = TestScheduler()
        let limiter = BandwidthLimiter<Int>(overall: 1000, scheduler: scheduler)
        let resumed = Locked(0)
        #expect(limiter.consumed(1100, by: 1) { resumed.withLock { $0 += 1 } } != nil)
        #expect(scheduler.scheduledDelays == [.seconds(1)])
        scheduler.advance(by: .milliseconds(999))
        #expect(resumed.current == 0)
        scheduler.advance(by: .milliseconds(1))
        #expect(resumed.current == 1)
        #expect(scheduler.scheduledCount == 0)
    }

    /// Two transfers under one overall limit read a chunk each in turn: even shares, the limit in all.
    @Test func theOverallLimitIsSharedEvenly() {
        let scheduler = TestScheduler()
        let rate: Int64 = 256 << 10
        let readers = Readers(BandwidthLimiter<Int>(overall: rate, scheduler: scheduler))
        readers.start(1)
        readers.start(2)
        scheduler.advance(by: .seconds(10))
        let (first, second) = (readers.bytes(1), readers.bytes(2))
        #expect(abs(first - second) <= Self.chunk)
        #expect(abs(Double(first + second) - Double(rate) * 10) <= Double(3 * Self.chunk))
    }

    /// An item limited below its share leaves the rest to the other.
    @Test func anItemLimitedLowerLeavesTheRestToTheOthers() {
        let scheduler = TestScheduler()
        let limiter = BandwidthLimiter<Int>(overall: 256 << 10, scheduler: scheduler)
        limiter.setLimit(32 << 10, for: 1)
        #expect(limiter.limit(for: 1) == 32 << 10)
        let readers = Readers(limiter)
        readers.start(1)
        readers.start(2)
        scheduler.advance(by: .seconds(10))
        #expect(abs(Double(readers.bytes(1)) - Double(320 << 10)) <= Double(2 * Self.chunk))
        #expect(abs(Double(readers.bytes(1) + readers.bytes(2)) - Double(2560 << 10)) <= Double(3 * Self.chunk))
    }

    /// Raising a limit wakes a waiting reader at once; lowering it makes the next wait longer.
    @Test func aChangedLimitTakesEffectForWaitingReaders() {
        let scheduler = TestScheduler()
        let limiter = BandwidthLimiter<Int>(overall: 1, scheduler: scheduler)
        let resumed = Locked(0)
        #expect(limiter.consumed(Self.chunk, by: 1) { resumed.withLock { $0 += 1 } } != nil)
        #expect(scheduler.scheduledDelays == [.milliseconds(Self.chunk * 1000 - 100)])
        limiter.setOverall(nil)
        #expect(resumed.current == 1)
        #expect(scheduler.scheduledCount == 0)

        limiter.setLimit(1000, for: 2)
        #expect(limiter.consumed(1100, by: 2) { resumed.withLock { $0 += 1 } } != nil)
        limiter.setLimit(500, for: 2)
        #expect(scheduler.scheduledDelays == [.seconds(2)])
        scheduler.advance(by: .seconds(1))
        #expect(resumed.current == 1)
        limiter.setLimit(nil, for: 2)
        #expect(resumed.current == 2)
        #expect(scheduler.scheduledCount == 0)
    }

    @Test func aCancelledWaitNeverResumes() {
        let scheduler = TestScheduler()
        let limiter = BandwidthLimiter<Int>(overall: 1000, scheduler: scheduler)
        let wait = limiter.consumed(5000, by: 1) { Issue.record("a cancelled wait resumed") }
        try? #require(wait != nil)
        if let wait { limiter.cancel(wait) }
        #expect(scheduler.scheduledCount == 0)
        scheduler.advance(by: .seconds(60))
        limiter.setOverall(nil)
    }
}
