import Foundation
import JobKit

/// `COLUMNS`: the width a user may give in place of the terminal's, read by the live display and by
/// the argument parser's help.
enum EnvironmentColumns {
    /// The widths accepted. The argument parser wraps help text at the width minus up to 28 columns of
    /// indent, and traps (in debug builds) when nothing is left; above 10,000 a line is no longer a
    /// line.
    static let range: ClosedRange<Double> = 30...10_000

    /// `COLUMNS`, read once, before the command line is parsed: a valid width, or nil. An invalid
    /// value is reported in one line on standard error and removed from the environment, so that the
    /// argument parser, which reads the variable too, never sees it.
    static let value: Int? = {
        let reading = EnvironmentColumns.reading(ProcessInfo.processInfo.environment["COLUMNS"])
        if case .invalid = reading { unsetenv("COLUMNS") }
        return reading.reportingInvalid().map { Int($0) }
    }()

    /// What `text`, the value of `COLUMNS`, means.
    static func reading(_ text: String?) -> EnvironmentValue {
        EnvironmentValue.parse(
            text, named: "COLUMNS", in: range, integral: true, expected: "a terminal width in columns")
    }
}
