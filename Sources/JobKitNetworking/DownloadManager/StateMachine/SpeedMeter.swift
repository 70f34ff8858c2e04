/// A moving average of bytes per second, from samples of a byte count that only grows.
///
/// Samples are kept at most one per twentieth of the window; the speed is the growth since the
/// oldest sample still inside the window, over the time since then. A stall brings it to 0 once the
/// window has passed. Times are nanoseconds on any monotonic clock.
struct SpeedMeter: Equatable {
    private var samples: [Sample] = []
    let window: UInt64
    private var spacing: UInt64 { max(window / 20, 1) }

    private struct Sample: Equatable {
        var time: UInt64
        var bytes: Int64
    }

    init(window: UInt64) {
        self.window = max(window, 1)
    }

    /// Notes that `bytes` had moved by `now`.
    mutating func record(_ bytes: Int64, at now: UInt64) {
        if let last = samples.last, now &- last.time < spacing, now >= last.time { return }
        samples.append(Sample(time: now, bytes: bytes))
        let horizon = now > window ? now - window : 0
        // Keep the newest sample at or before the horizon as the anchor of the window.
        while samples.count > 1, samples[1].time <= horizon { samples.removeFirst() }
    }

    /// Bytes per second over the window ending at `now`, given the count then.
    func rate(_ bytes: Int64, at now: UInt64) -> Double {
        let horizon = now > window ? now - window : 0
        guard let oldest = samples.first(where: { $0.time >= horizon }) ?? samples.last, now > oldest.time else {
            return 0
        }
        let elapsed = Double(now - oldest.time) / 1e9
        guard elapsed >= 0.001 else { return 0 }
        return max(Double(bytes - oldest.bytes), 0) / elapsed
    }

    /// Forgets every sample (the item stopped).
    mutating func reset() { samples = [] }
}
