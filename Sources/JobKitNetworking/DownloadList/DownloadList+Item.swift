import Foundation

extension DownloadList {
    /// One row of a `DownloadList`: a manager's item as of the list's latest update.
    public struct Item: Sendable, Equatable, Identifiable {
        /// The manager's id of the item.
        public let id: DownloadManager.ItemID
        /// Its file name in the manager's directory.
        public let name: String
        /// Where it is downloaded from.
        public let url: URL
        /// Where it is.
        public var state: DownloadManager.State
        /// Bytes in the file so far.
        public var receivedBytes: Int64
        /// The file's length, once the server said.
        public var expectedBytes: Int64?
        /// Bytes per second while it runs (the manager's `SpeedMeter` average over
        /// `Configuration.speedWindow`); 0 otherwise.
        public var bytesPerSecond: Double
        /// Seconds left at that speed; nil when the length or the speed is unknown.
        public var secondsRemaining: Double?

        /// The row of a manager's item.
        public init(_ item: DownloadManager.Item) {
            id = item.id
            name = item.name
            url = item.url
            state = item.state
            receivedBytes = item.progress.received
            expectedBytes = item.progress.expected
            bytesPerSecond = item.progress.bytesPerSecond
            secondsRemaining = item.progress.secondsRemaining
        }

        /// `receivedBytes / expectedBytes` in `0...1` (1 once completed); nil while the length is
        /// unknown.
        public var fraction: Double? {
            if state == .completed { return 1 }
            guard let expectedBytes else { return nil }
            guard expectedBytes > 0 else { return 1 }
            return min(max(Double(receivedBytes) / Double(expectedBytes), 0), 1)
        }

        /// The fraction as a whole percent, `0...100` (rounded down: 100 only once complete); nil
        /// while the length is unknown.
        public var percent: Int? { fraction.map { Int(($0 * 100).rounded(.down)) } }
    }
}
