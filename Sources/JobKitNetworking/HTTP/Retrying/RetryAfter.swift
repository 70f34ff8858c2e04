import Foundation
import JobKit

/// `Retry-After` parsing.
enum RetryAfter {
    /// The longest delay a `Retry-After` is read as: more digits than an `Int64` holds mean "not
    /// soon", never an overflow.
    static let longest: Duration = .seconds(Int64.max)

    /// `value` read as delay-seconds or as an HTTP-date (relative to `responseDate`, else `now`).
    static func delay(_ value: String, responseDate: String?, now: Date) -> Duration? {
        let value = value.trimmingCharacters(in: .whitespaces)
        if !value.isEmpty, value.count < 1000, value.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return Int64(value).map { .seconds($0) } ?? longest
        }
        guard value.count < 100, let date = HTTPDate.parse(value) else { return nil }
        let reference = responseDate.flatMap(HTTPDate.parse) ?? now
        let seconds = date.timeIntervalSince(reference)
        guard seconds.isFinite else { return nil }
        if seconds <= 0 { return .zero }
        return seconds >= 9e15 ? longest : .milliseconds(Int64(seconds * 1000))
    }
}
