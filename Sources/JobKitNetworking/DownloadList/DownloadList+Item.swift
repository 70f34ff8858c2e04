import Foundation

extension DownloadList {
    /// One row of a `DownloadList`: the manager's item itself, as of the list's latest update.
    @available(*, deprecated, renamed: "DownloadManager.Item")
    public typealias Item = DownloadManager.Item
}

extension DownloadManager.Item {
    /// `progress.received / progress.expected` in `0...1`, and 1 once completed (whatever the
    /// server said of the length); nil while the length is unknown.
    public var fraction: Double? { state == .completed ? 1 : progress.fraction }

    /// The fraction as a whole percent, `0...100` (rounded down: 100 only once complete); nil
    /// while the length is unknown.
    public var percent: Int? { fraction.map { Int(($0 * 100).rounded(.down)) } }

    /// The row of a manager's item: the item itself (what `DownloadList.Item` was made with).
    @available(*, deprecated, message: "a DownloadList's rows are the manager's items: use the item")
    public init(_ item: DownloadManager.Item) { self = item }

    /// Bytes in the file so far (`progress.received`).
    @available(*, deprecated, message: "use progress.received")
    public var receivedBytes: Int64 {
        get { progress.received }
        set { progress.received = newValue }
    }

    /// The file's length, once the server said (`progress.expected`).
    @available(*, deprecated, message: "use progress.expected")
    public var expectedBytes: Int64? {
        get { progress.expected }
        set { progress.expected = newValue }
    }

    /// Bytes per second while it runs (`progress.bytesPerSecond`).
    @available(*, deprecated, message: "use progress.bytesPerSecond")
    public var bytesPerSecond: Double {
        get { progress.bytesPerSecond }
        set { progress.bytesPerSecond = newValue }
    }

    /// Seconds left at that speed (`progress.secondsRemaining`).
    @available(*, deprecated, message: "use progress.secondsRemaining")
    public var secondsRemaining: Double? {
        get { progress.secondsRemaining }
        set { progress.secondsRemaining = newValue }
    }
}
