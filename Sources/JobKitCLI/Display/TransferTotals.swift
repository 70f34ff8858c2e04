/// The sum of all rows: the total line. Bytes, speed and time left add up the rows that did not fail and were
/// not cancelled; the counts count every row.
struct TransferTotals: Equatable, Sendable {
    var count = 0
    var completed = 0
    var failed = 0
    var cancelled = 0
    var active = 0
    var bytesDone: Int64 = 0
    /// Nil unless every row's total is known.
    var totalBytes: Int64?
    var bytesPerSecond: Double = 0
    var secondsRemaining: Double?

    /// The totals of `rows`; sums saturate at `Int64.max` instead of overflowing.
    init(_ rows: some Sequence<TransferRow>) {
        var total: Int64? = 0
        for row in rows {
            count += 1
            switch row.status {
            case .completed: completed += 1
            case .failed: failed += 1
            case .cancelled: cancelled += 1
            case .running, .retrying, .paused: active += 1
            case .queued: break
            }
            // What failed or was cancelled is not part of what is left to transfer: only its count shows.
            if case .failed = row.status { continue }
            if row.status == .cancelled { continue }
            bytesDone = Self.add(bytesDone, max(0, row.bytesDone))
            if let known = total, let rowTotal = row.totalBytes {
                total = Self.add(known, max(0, rowTotal))
            } else {
                total = nil
            }
            if row.status == .running, row.bytesPerSecond.isFinite, row.bytesPerSecond > 0 {
                bytesPerSecond += row.bytesPerSecond
            }
        }
        totalBytes = count == 0 ? nil : total
        if let totalBytes, bytesPerSecond > 0 {
            secondsRemaining = Double(max(0, totalBytes - bytesDone)) / bytesPerSecond
        }
    }

    private static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
