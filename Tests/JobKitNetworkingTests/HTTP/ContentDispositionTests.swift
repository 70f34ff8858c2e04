import Foundation
import Testing

@testable import JobKitNetworking

/// `ContentDisposition.fileName`: RFC 6266's forms, and what a hostile server may send.
@Suite struct ContentDispositionTests {
    @Test(arguments: [
        (#"attachment; filename="a b.pdf""#, "a b.pdf"),
        ("attachment; filename=plain.txt", "plain.txt"),
        (#"attachment; FILENAME="x\"y.txt""#, #"x"y.txt"#),
        (#"attachment; filename="fallback"; filename*=UTF-8''%E2%82%AC%20rates.txt"#, "€ rates.txt"),
        (#"attachment; filename*=utf-8'en'caf%C3%A9.txt; filename="cafe.txt""#, "café.txt"),
        (#"attachment; filename*=ISO-8859-1''caf%E9.txt; filename="cafe.txt""#, "cafe.txt"),
        (#"attachment; filename="../../etc/passwd""#, "passwd"),
        (#"attachment; filename="C:\Windows\evil.dll""#, "evil.dll"),
        (#"attachment; filename="dir/""#, ""),
        ("attachment; filename*=UTF-8''a%00b", "a\u{0}b"),
    ])
    func theFileNameIsTheLastComponentOfWhatTheServerSaid(_ header: String, _ expected: String) {
        #expect(ContentDisposition.fileName(header) == expected)
    }

    @Test(arguments: ["inline", "attachment", "", "attachment; name=x", "attachment; filename*=UTF-8''%ZZ", ";;;="])
    func noFileNameWithoutOne(_ header: String) {
        #expect(ContentDisposition.fileName(header) == nil)
    }
}
