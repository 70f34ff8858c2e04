extension DownloadManager {
    /// Bytes of one item (or all), with speed and time remaining.
    public struct ByteProgress: Sendable, Equatable {
        /// Bytes in the file so far: a resumed `.part`'s bytes count from the start.
        public var received: Int64
        /// The file's length, once the server said (nil before, or when it never does).
        public var expected: Int64?
        /// Bytes per second, averaged over `Configuration.speedWindow`; 0 when nothing moves.
        public var bytesPerSecond: Double
        /// Seconds left at that speed; nil when the length or the speed is unknown (or zero).
        public var secondsRemaining: Double?

        /// A progress made by hand (for tests); see the properties.
        package init(received: Int64, expected: Int64?, bytesPerSecond: Double = 0, secondsRemaining: Double? = nil) {
            self.received = received
            self.expected = expected
            self.bytesPerSecond = bytesPerSecond
            self.secondsRemaining = secondsRemaining
        }

        /// `received / expected`, in `0...1`; nil while the length is unknown.
        public var fraction: Double? {
            guard let expected else { return nil }
            guard expected > 0 else { return 1 }
            return min(max(Double(received) / Double(expected), 0), 1)
        }
    }
}
