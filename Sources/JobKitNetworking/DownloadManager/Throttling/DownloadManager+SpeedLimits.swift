import Foundation

extension DownloadManager {
    // MARK: Speed limits

    /// Changes the overall speed limit, in bytes a second, effective at once for the running
    /// downloads too: nil, zero or negative removes it. See `Configuration.maxBytesPerSecond`.
    ///
    /// ```swift
    /// manager.setMaxBytesPerSecond(512 << 10)   // 512 KiB/s from now on
    /// manager.setMaxBytesPerSecond(nil)         // as fast as they go
    /// ```
    public func setMaxBytesPerSecond(_ bytesPerSecond: Int64?) {
        limiter.setOverall(bytesPerSecond)
    }

    /// Changes the speed limit of one item, in bytes a second, effective at once if it runs: nil,
    /// zero or negative removes it. See `Request.maxBytesPerSecond`.
    ///
    /// - Throws: `DownloadManagerError.unknownItem`.
    public func setMaxBytesPerSecond(_ bytesPerSecond: Int64?, for id: ItemID) throws(DownloadManagerError) {
        guard item(id) != nil else { throw .unknownItem(id) }
        limiter.setLimit(bytesPerSecond, for: id)
    }

    /// The overall speed limit now, in bytes a second; nil: none.
    public var maxBytesPerSecond: Int64? { limiter.overall }
}
