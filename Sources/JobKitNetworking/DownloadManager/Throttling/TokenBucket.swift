/// A token bucket in bytes: a rate, a burst of a tenth of a second's worth, and a debt.
///
/// A transfer reads a chunk first and pays for it after (`take`): the bytes are already there, so
/// the bucket goes into debt, and the next chunk may be read only once the debt is paid (`wait`).
/// That is the whole of it: no timer and no lock of its own — the owner (`BandwidthLimiter`) keeps
/// it under its lock and gives it the time, in nanoseconds of any monotonic clock.
///
/// No trap from any number: rates of 1 byte a second and `Int64.max` work, tokens are a `Double`
/// (debt of any size, no overflow), and a wait too long for a `UInt64` is `UInt64.max`.
struct TokenBucket: Sendable, Equatable {
    /// The burst a full bucket allows: this many seconds' worth of the rate.
    static let burstSeconds = 0.1

    /// Bytes per second; nil: no limit.
    private(set) var rate: Int64?
    /// Bytes that may be read now; negative: a debt.
    private(set) var tokens: Double
    /// The tokens earned since the start (what refills added): the clock debts are paid by.
    private(set) var earned: Double = 0
    /// When `tokens` was last brought up to date.
    private var updated: UInt64

    /// A full bucket of `rate` bytes a second (nil, zero or negative: no limit), at time `now`.
    init(rate: Int64?, now: UInt64) {
        self.rate = Self.limit(rate)
        updated = now
        tokens = 0
        tokens = capacity
    }

    /// `rate` as a limit: nil for nil, zero or negative (no limit).
    static func limit(_ rate: Int64?) -> Int64? {
        guard let rate, rate > 0 else { return nil }
        return rate
    }

    /// The most tokens the bucket holds: the burst.
    var capacity: Double { rate.map { Double($0) * Self.burstSeconds } ?? 0 }

    /// Pays for `bytes` just read at `now`; returns how long, in nanoseconds, to wait before the
    /// next read (0: at once).
    mutating func take(_ bytes: Int, now: UInt64) -> UInt64 {
        wait(until: owe(bytes, now: now), now: now)
    }

    /// Pays for `bytes` just read at `now`; returns the mark of `earned` at which they are paid
    /// (nil: they are already), for `wait(until:now:)`. Debts are paid in the order they were made:
    /// a later one never delays an earlier one's mark.
    mutating func owe(_ bytes: Int, now: UInt64) -> Double? {
        refill(now)
        guard rate != nil else { return nil }
        tokens -= Double(max(bytes, 0))
        return tokens < 0 ? earned - tokens : nil
    }

    /// How long, in nanoseconds from `now`, until the debt is paid (0: none is owed).
    mutating func wait(now: UInt64) -> UInt64 {
        wait(until: tokens < 0 ? earned - tokens : nil, now: now)
    }

    /// How long, in nanoseconds from `now`, until `earned` reaches `mark` (0: it has, or no mark,
    /// or no limit).
    mutating func wait(until mark: Double?, now: UInt64) -> UInt64 {
        refill(now)
        guard let rate, let mark, mark > earned else { return 0 }
        let nanoseconds = ((mark - earned) / Double(rate) * 1e9).rounded(.up)
        // 2⁶⁴ ns is about 585 years; beyond that the wait never ends.
        return nanoseconds >= 0x1p64 ? .max : UInt64(nanoseconds)
    }

    /// Changes the rate from `now` on (nil, zero or negative: no limit). What was earned until now
    /// is earned at the old rate; a debt is then paid at the new one, and forgiven without a limit.
    mutating func setRate(_ newRate: Int64?, now: UInt64) {
        refill(now)
        rate = Self.limit(newRate)
        tokens = rate == nil ? 0 : min(tokens, capacity)
    }

    private mutating func refill(_ now: UInt64) {
        defer { updated = max(updated, now) }
        guard let rate, now > updated else { return }
        let added = max(0, min(Double(rate) * Double(now - updated) / 1e9, capacity - tokens))
        tokens += added
        earned += added
    }
}
