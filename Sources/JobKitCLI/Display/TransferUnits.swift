/// Short, fixed-style texts for sizes, speeds and durations, as the transfer display shows them.
///
/// Every function is total: negative, `NaN`, infinite and `Int64.max` inputs give a text, never a trap.
enum TransferUnits {
    private static let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// `1023 B`, `1.0 KiB`, `12.3 MiB`, `8.0 EiB` (binary units, one decimal past bytes).
    static func bytes(_ count: Int64) -> String {
        guard count > 0 else { return "0 B" }
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return "\(oneDecimal(value)) \(units[unit])"
    }

    /// `12.3 MiB/s`, or `--` when nothing is moving (zero, negative or not a number).
    static func speed(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond >= 1 else { return "--" }
        return bytes(bytesPerSecond >= 9.2e18 ? .max : Int64(bytesPerSecond)) + "/s"
    }

    /// `0:07`, `12:30`, `1:02:03`; `--:--` when unknown; `>99h` past 99 hours.
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "--:--" }
        guard seconds < 99 * 3600 else { return ">99h" }
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigitSeconds = rest < 10 ? "0\(rest)" : "\(rest)"
        if hours == 0 { return "\(minutes):\(twoDigitSeconds)" }
        return "\(hours):\(minutes < 10 ? "0" : "")\(minutes):\(twoDigitSeconds)"
    }

    /// `42%` of `done` over `total` (clamped to 0...100), or nil when the total is unknown.
    static func percent(_ done: Int64, of total: Int64?) -> Int? {
        guard let total else { return nil }
        guard total > 0 else { return done >= 0 ? 100 : 0 }
        let done = max(0, min(done, total))
        // In integers, so that a byte short of a huge total never reads 100%.
        let (scaled, overflow) = done.multipliedReportingOverflow(by: 100)
        let percent = Int(overflow ? done / (total / 100) : scaled / total)
        return done < total ? min(percent, 99) : 100
    }

    /// `value` with one decimal, rounded down so that 1023.96 KiB never reads as a misleading `1024.0`.
    private static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded(.down))
        return "\(tenths / 10).\(tenths % 10)"
    }
}
