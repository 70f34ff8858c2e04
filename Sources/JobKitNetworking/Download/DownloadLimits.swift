/// The bounds a download puts on the numbers a server (or a journal) gives it.
enum DownloadLimits {
    /// The longest file a download accepts: 2⁵⁰ bytes (1 PiB), more than any file system holds in one
    /// file and far enough from `Int64.max` that sums, products for progress and ranges never overflow.
    /// A `Content-Length` or `Content-Range` beyond it fails the download as an inconsistent response.
    static let maximumLength: Int64 = 1 << 50
}
