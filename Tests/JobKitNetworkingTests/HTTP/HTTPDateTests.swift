import Foundation
import Testing

@testable import JobKitNetworking

@Suite struct HTTPDateTests {
    /// Written as a server writes it (and read as `DateFormatter` reads it).
    static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()

    @Test func readsTheExampleOfRFC9110() {
        #expect(HTTPDate.imfFixdate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test func readsEveryIMFFixdateAsTheFormatterDoes() {
        var random = SystemRandomNumberGenerator()
        // From 1600 to 9999, leap days and the last second of a day among them.
        var seconds: [Int64] = [-11_676_096_000, 0, 951_782_400, 951_868_799, 253_402_300_799]
        seconds += (0..<20_000).map { _ in Int64.random(in: -11_676_096_000...253_402_300_799, using: &random) }
        for second in seconds {
            let date = Date(timeIntervalSince1970: Double(second))
            let text = Self.formatter.string(from: date)
            #expect(HTTPDate.imfFixdate(text) == date, "\(text)")
            #expect(HTTPDate.parse(text) == date, "\(text)")
        }
    }

    @Test(arguments: [
        "Mon, 06 Nov 1994 08:49:37 GMT",  // the wrong weekday
        "Wed, 29 Feb 2023 00:00:00 GMT",  // no such day
        "Thu, 31 Apr 2025 00:00:00 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:37 GMT",
        "Sun, 06 Nov 1994 08:49:60 GMT",  // a leap second: the formatter's to judge
        "sun, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun,  6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 19a4 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:3 GMT",
        "Fri, 01 Jan 1500 00:00:00 GMT",  // before 1600: another calendar, maybe
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "",
        "Sun, 06 Nov 1994 08:49:37 GMT\u{301}",
    ])
    func leavesAnythingElseToTheFormatter(_ text: String) {
        #expect(HTTPDate.imfFixdate(text) == nil)
    }

    @Test func readsTheObsoleteForms() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == date)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == date)
        #expect(HTTPDate.parse("not a date") == nil)
    }

    @Test func countsDaysAcrossCenturiesAndBefore1970() {
        #expect(HTTPDate.daysSince1970(year: 1970, month: 1, day: 1) == 0)
        #expect(HTTPDate.daysSince1970(year: 1969, month: 12, day: 31) == -1)
        #expect(HTTPDate.daysSince1970(year: 2000, month: 3, day: 1) == 11_017)
        #expect(HTTPDate.daysSince1970(year: 1600, month: 1, day: 1) == -135_140)
    }
}
