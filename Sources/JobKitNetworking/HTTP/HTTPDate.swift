import Foundation
import JobKit

/// An HTTP-date (RFC 9110, section 5.6.7): the IMF-fixdate every server sends today
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), read by hand, and the obsolete RFC 850 and asctime forms, read
/// by `DateFormatter`.
///
/// Every response with a `Last-Modified` or a `Date` is read through here: a `DateFormatter` took
/// 3.5% of the download manager's simulation (ICU's parser, and a lock around the shared
/// formatters); the hand-written path reads an IMF-fixdate with no allocation. It answers only for a
/// date that is exactly one (its weekday the date's, every field in range, a year from 1600 on, in the
/// Gregorian calendar the formatter uses there); anything else goes to the formatters, so what is
/// accepted, and as what, is theirs.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        imfFixdate(text)
            ?? formatters.withLock { formatters in
                for formatter in formatters {
                    if let date = formatter.date(from: text) { return date }
                }
                return nil
            }
    }

    /// `text` as an IMF-fixdate, or nil.
    static func imfFixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == space, bytes[7] == space,
                bytes[11] == space, bytes[16] == space, bytes[19] == colon, bytes[22] == colon, bytes[25] == space,
                bytes[26] == UInt8(ascii: "G"), bytes[27] == UInt8(ascii: "M"), bytes[28] == UInt8(ascii: "T"),
                let weekday = index(of: bytes, at: 0, in: weekdays),
                let month = index(of: bytes, at: 8, in: months),
                let day = number(bytes, 5, 2), let year = number(bytes, 12, 4),
                let hour = number(bytes, 17, 2), let minute = number(bytes, 20, 2), let second = number(bytes, 23, 2),
                year >= 1600, hour < 24, minute < 60, second < 60,
                (1...daysIn(month: month + 1, year: year)).contains(day)
            else { return nil }
            let days = daysSince1970(year: year, month: month + 1, day: day)
            // 1970-01-01 was a Thursday (index 4, counted from Sunday).
            guard ((days % 7) + 11) % 7 == weekday else { return nil }
            return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second))
        }
    }

    private static let space = UInt8(ascii: " ")
    private static let colon = UInt8(ascii: ":")
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].map { Array($0.utf8) }
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .map { Array($0.utf8) }

    /// Which of `names` (three bytes each) `bytes` has at `offset`.
    private static func index(of bytes: UnsafeBufferPointer<UInt8>, at offset: Int, in names: [[UInt8]]) -> Int? {
        names.firstIndex { $0[0] == bytes[offset] && $0[1] == bytes[offset + 1] && $0[2] == bytes[offset + 2] }
    }

    /// The `count` decimal digits at `offset`, or nil when one is not a digit.
    private static func number(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int, _ count: Int) -> Int? {
        var value = 0
        for byte in bytes[offset..<offset + count] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date, in the proleptic Gregorian calendar (negative before).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        // March-based years, so that a leap day ends its year (H. Hinnant's `days_from_civil`).
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The three forms of an HTTP-date, in order; used under the lock (a formatter is not documented
    /// as safe to share between threads everywhere).
    private static let formatters = LockedBox<[DateFormatter]>.make(
        ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"].map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            return formatter
        })
}
