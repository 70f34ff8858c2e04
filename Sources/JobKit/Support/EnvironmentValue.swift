import Foundation

/// Numbers that JobKit and `jobkit` read from environment variables (`JOBKIT_MAIN_WATCHDOG`,
/// `COLUMNS`): input from outside, validated once, where it enters.
///
/// A value that is not a finite number within its range — `inf`, `nan`, `1e30`, `-1`, garbage — is
/// ignored, never trusted and never a trap: the caller prints the warning, one line that names the
/// variable and the value.
package enum EnvironmentValue: Equatable {
    /// The variable is not set, or set to the empty string.
    case unset
    /// A finite number within the range asked for.
    case number(Double)
    /// Set to something else: ignored, with this line (no newline) to print on standard error.
    case invalid(warning: String)

    /// Reads `text`, the value of the variable `name`, as a number within `range` (a whole number when
    /// `integral`); `expected` says what the variable holds, for the warning (`"a duration in
    /// seconds"`), which names the range after it.
    package static func parse(
        _ text: String?, named name: String, in range: ClosedRange<Double>, integral: Bool = false,
        expected: String
    ) -> EnvironmentValue {
        guard let text, !text.isEmpty else { return .unset }
        // `Double(_:)` also reads "inf", "nan" and "1e30": each is turned away by the range check.
        if let number = Double(text), number.isFinite, range.contains(number), !integral || number.rounded() == number {
            return .number(number)
        }
        let printable = text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : String($0) }
        let warning =
            "warning: ignoring \(name)='\(printable.joined().prefix(64))': not \(expected) between "
            + "\(format(range.lowerBound)) and \(format(range.upperBound))"
        return .invalid(warning: warning)
    }

    /// The number, if the value was a valid one.
    package var number: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// Prints the warning of an invalid value on standard error; returns the number of a valid one.
    package func reportingInvalid() -> Double? {
        if case .invalid(let warning) = self { FileHandle.standardError.write(Data((warning + "\n").utf8)) }
        return number
    }

    /// `0.001`, `86400`: no trailing `.0` on whole numbers.
    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}
