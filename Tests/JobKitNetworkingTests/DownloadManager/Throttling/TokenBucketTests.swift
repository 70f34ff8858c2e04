import Testing

@testable import JobKitNetworking

/// `TokenBucket` alone, in virtual time (nanoseconds handed in by the test).
@Suite struct TokenBucketTests {
    private static let second: UInt64 = 1_000_000_000

    @Test func aFullBucketLetsItsBurstThroughThenWaitsForTheDebt() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        #expect(bucket.capacity == 100)  // a tenth of a second's worth
        #expect(bucket.take(100, now: 0) == 0)
        #expect(bucket.take(500, now: 0) == Self.second / 2)
        #expect(bucket.wait(now: Self.second / 4) == Self.second / 4)
        #expect(bucket.wait(now: Self.second / 2) == 0)
    }

    /// A reader that reads 16 KiB chunks and waits as told reads the rate, plus its burst and one
    /// chunk, over ten virtual seconds.
    @Test func aReaderThatWaitsAsToldReadsAtTheRate() {
        let rate: Int64 = 512 << 10
        var bucket = TokenBucket(rate: rate, now: 0)
        var now: UInt64 = 0
        var read = 0
        while now < 10 * Self.second {
            read += 16 << 10
            now += bucket.take(16 << 10, now: now)
        }
        let expected = Double(rate) * 10 + bucket.capacity + Double(16 << 10)
        #expect(abs(Double(read) - expected) <= Double(16 << 10))
    }

    @Test func anIdleBucketHoldsNoMoreThanItsBurst() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        #expect(bucket.take(100, now: 0) == 0)
        #expect(bucket.wait(now: 3600 * Self.second) == 0)
        #expect(bucket.tokens == 100)
        #expect(bucket.take(101, now: 3600 * Self.second) == Self.second / 1000)
    }

    @Test func aChangedRatePaysTheDebtAtTheNewRate() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        #expect(bucket.take(1100, now: 0) == Self.second)
        bucket.setRate(2000, now: 0)
        #expect(bucket.wait(now: 0) == Self.second / 2)
        bucket.setRate(500, now: Self.second / 4)  // half the debt paid at 2000 B/s
        #expect(bucket.wait(now: Self.second / 4) == Self.second)
    }

    @Test func noLimitForgivesTheDebtAndZeroOrNegativeMeanNoLimit() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        #expect(bucket.take(1_000_000, now: 0) > 0)
        bucket.setRate(nil, now: 0)
        #expect(bucket.wait(now: 0) == 0)
        #expect(bucket.take(.max, now: 0) == 0)
        for rate: Int64 in [0, -1, .min] {
            var unlimited = TokenBucket(rate: rate, now: 0)
            #expect(unlimited.rate == nil)
            #expect(unlimited.take(1 << 30, now: 0) == 0)
        }
    }

    @Test func theLargestRateNeverTrapsNorWaitsForOrdinaryChunks() {
        var bucket = TokenBucket(rate: .max, now: 0)
        #expect(bucket.take(1 << 30, now: 0) == 0)
        #expect(bucket.take(.max, now: 1) < Self.second)
        #expect(bucket.wait(now: .max) == 0)
    }

    @Test func oneByteASecondWaitsLongWithoutTrapping() {
        var bucket = TokenBucket(rate: 1, now: 0)
        #expect(bucket.take(65_536, now: 0) == 65_535_900_000_000)  // less its burst, a tenth of a byte
        #expect(bucket.take(.max, now: 0) == .max)  // beyond 2⁶⁴ ns: saturated
        #expect(bucket.wait(now: .max) == .max)
        bucket.setRate(1, now: 0)  // time going backwards changes nothing
        #expect(bucket.wait(now: 0) == .max)
    }
}
