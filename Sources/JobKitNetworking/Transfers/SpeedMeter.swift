/// A moving average of bytes per second, from samples of a transfer's byte count.
///
/// The one speed meter of the package: the download manager's items and totals, and the CLI's
/// publisher rows. Samples are kept at most one per twentieth of the window, so memory is bounded
/// whatever the number of reports; the speed is the growth since the oldest sample still inside the
/// window, over the time since then. A stall brings it to 0 once the window has passed; a count that
/// goes down (the transfer started over) forgets the older samples. Pure: times are given, never read
/// — nanoseconds on any monotonic clock.
package struct SpeedMeter: Sendable, Equatable {
    private var samples: [Sample] = []
    /// The span of the average, in nanoseconds.
    package let window: UInt64
    private var spacing: UInt64 { max(window / 20, 1) }

    private struct Sample: Equatable {
        var time: UInt64
        var bytes: Int64
    }

    /// A meter averaging over `window` nanoseconds (at least 1).
    package init(window: UInt64) {
        self.window = max(window, 1)
    }

    /// Notes that `bytes` had moved by `now`.
    package mutating func record(_ bytes: Int64, at now: UInt64) {
        if let last = samples.last, bytes < last.bytes || now < last.time { samples.removeAll() }
        if let last = samples.last, now - last.time < spacing { return }
        samples.append(Sample(time: now, bytes: bytes))
        let horizon = now > window ? now - window : 0
        // Keep the newest sample at or before the horizon as the anchor of the window.
        while samples.count > 1, samples[1].time <= horizon { samples.removeFirst() }
    }

    /// Bytes per second over the window ending at `now`, given the count then.
    package func rate(_ bytes: Int64, at now: UInt64) -> Double {
        let horizon = now > window ? now - window : 0
        guard let oldest = samples.first(where: { $0.time >= horizon }) ?? samples.last, now > oldest.time else {
            return 0
        }
        let elapsed = Double(now - oldest.time) / 1e9
        guard elapsed >= 0.001 else { return 0 }
        return max(Double(bytes) - Double(oldest.bytes), 0) / elapsed
    }

    /// Seconds until `total` at the rate over the window ending at `now`; nil when the total is unknown
    /// or nothing moves.
    package func secondsRemaining(_ bytes: Int64, of total: Int64?, at now: UInt64) -> Double? {
        let speed = rate(bytes, at: now)
        guard let total, speed > 0 else { return nil }
        return Double(max(0, total - bytes)) / speed
    }

    /// Forgets every sample (the item stopped).
    package mutating func reset() { samples = [] }
}
