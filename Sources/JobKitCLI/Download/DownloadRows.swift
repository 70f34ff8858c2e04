import JobKitNetworking

/// A `DownloadManager` item as a row of the transfer display.
enum DownloadRows {
    /// The row of `item`.
    static func row(for item: DownloadManager.Item) -> TransferRow {
        var row = TransferRow(
            id: Int(truncatingIfNeeded: item.id.rawValue), name: item.name, bytesDone: item.progress.received,
            totalBytes: item.progress.expected)
        switch item.state {
        case .pending:
            row.status = .queued
        case .running, .verifying:
            row.status = .running
            row.bytesPerSecond = item.progress.bytesPerSecond
            row.secondsRemaining = item.progress.secondsRemaining
        case .suspended:
            row.status = .paused
        case .completed:
            row.status = .completed
        case .failed(let failure):
            row.status = .failed(reason: SecretRedaction.redact(failure.message).escapingControlCharacters)
        case .cancelled:
            row.status = .cancelled
        }
        return row
    }
}
