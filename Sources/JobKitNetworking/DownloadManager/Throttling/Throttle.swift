/// One download's side of its manager's `BandwidthLimiter`: what its transport tells of each chunk
/// it read, and waits on before reading the next.
package struct Throttle: Sendable {
    package typealias Wait = BandwidthLimiter<DownloadManager.ItemID>.Wait

    let limiter: BandwidthLimiter<DownloadManager.ItemID>
    let item: DownloadManager.ItemID

    /// `bytes` were just read; nil: read on at once; else the wait, ended by `resume` (see
    /// `BandwidthLimiter.consumed`).
    package func consumed(_ bytes: Int, resume: @escaping @Sendable () -> Void) -> Wait? {
        limiter.consumed(bytes, by: item, resume: resume)
    }

    /// Calls off `wait`.
    package func cancel(_ wait: Wait) { limiter.cancel(wait) }
}
