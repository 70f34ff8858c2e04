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
        guard value.count < 100, let date = httpDate(value) else { return nil }
        let reference = responseDate.flatMap(httpDate) ?? now
        let seconds = date.timeIntervalSince(reference)
        guard seconds.isFinite else { return nil }
        if seconds <= 0 { return .zero }
        return seconds >= 9e15 ? longest : .milliseconds(Int64(seconds * 1000))
    }

    /// An HTTP-date (RFC 9110: IMF-fixdate, and the obsolete RFC 850 and asctime forms).
    static func httpDate(_ text: String) -> Date? {
        // One formatter per form, made once: making one costs more than the rest of reading a
        // response (it loads the locale's calendar); every response with a `Last-Modified` reads one.
        dateFormatters.withLock { formatters in
            for formatter in formatters {
                if let date = formatter.date(from: text) { return date }
            }
            return nil
        }
    }

    /// The three forms of an HTTP-date, in order; used under the lock (a formatter is not documented
    /// as safe to share between threads everywhere).
    private static let dateFormatters = LockedBox<[DateFormatter]>.make(
        ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"].map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            return formatter
        })
}
