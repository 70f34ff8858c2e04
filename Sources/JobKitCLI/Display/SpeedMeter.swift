/// A moving average of a transfer's speed: bytes over the last `window` seconds.
///
/// Keeps at most `maximumSamples` samples (older ones are dropped first), so its memory is bounded whatever
/// the number of reports. Pure: times are given, never read.
struct SpeedMeter: Sendable {
    /// The span of the average, in seconds.
    var window = 2.0
    /// The most samples kept.
    static let maximumSamples = 64
    private var samples: [(time: Double, bytes: Int64)] = []

    /// Records that `bytes` were done in all at `time`.
    mutating func record(bytes: Int64, at time: Double) {
        if let last = samples.last, bytes < last.bytes || time < last.time { samples.removeAll() }  // restarted
        samples.append((time, bytes))
        while samples.count > Self.maximumSamples || (samples.count > 2 && time - samples[1].time > window) {
            samples.removeFirst()
        }
    }

    /// Bytes per second over the window; 0 before two samples or when nothing moved.
    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }

    /// Seconds until `total`, at the current speed; nil when unknown.
    func secondsRemaining(total: Int64?) -> Double? {
        guard let total, let done = samples.last?.bytes, bytesPerSecond > 0 else { return nil }
        return Double(max(0, total - done)) / bytesPerSecond
    }
}
