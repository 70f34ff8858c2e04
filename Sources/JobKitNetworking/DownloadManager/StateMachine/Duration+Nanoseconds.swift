extension Duration {
    /// The duration in nanoseconds; negative ones are 0, huge ones saturate.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, over) = whole.addingReportingOverflow(UInt64(max(attoseconds, 0) / 1_000_000_000))
        return over ? .max : total
    }
}
