extension Int64 {
    /// `self + other`, or `Int64.max` / `Int64.min` where that overflows: for sums of numbers that
    /// come from outside (a server's lengths), which must never trap.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, or `Int64.max` / `Int64.min` where that overflows.
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }
}
