import Foundation
import Testing

@testable import JobKitNetworking

/// `DownloadManager.Header`: what can be sent, and what cannot — refused with a reason, never dropped.
@Suite struct HeaderTests {
    @Test func aHeaderIsParsedTrimmedAndGivenBack() throws {
        let header = try DownloadManager.Header(parsing: "Authorization:  Bearer abc \t")
        #expect(header.name == "Authorization" && header.value == "Bearer abc")
        #expect(header.description == "Authorization: Bearer abc")
        #expect(try DownloadManager.Header(parsing: "X-Empty:").value == "")
        #expect(try DownloadManager.Header("Cookie", "a=1; b=2\tc").value == "a=1; b=2\tc")
    }

    @Test(arguments: DownloadManager.Header.reservedNames.sorted())
    func reservedNamesAreRefusedInAnyCase(_ name: String) {
        #expect(throws: DownloadManagerError.self) { try DownloadManager.Header(name.uppercased(), "x") }
    }

    @Test(arguments: [
        ("", "x", "needs a name"),
        ("Bad Name", "x", "letters, digits"),
        ("X-Smuggle", "a\r\nHost: evil", "control character"),
        ("X-Nul", "a\u{0}b", "control character"),
        ("X-Long", String(repeating: "v", count: 8_193), "at most 8192 bytes"),
        (String(repeating: "n", count: 257), "x", "at most 256 bytes"),
    ])
    func unsendableHeadersAreRefusedWithAReason(_ name: String, _ value: String, _ reason: String) {
        let error = #expect(throws: DownloadManagerError.self) { try DownloadManager.Header(name, value) }
        #expect(error?.localizedDescription.contains(reason) == true, "\(String(describing: error))")
        #expect(error?.localizedDescription.contains("evil") != true, "the value is never echoed")
    }

    @Test func textWithoutAColonIsRefused() {
        #expect(throws: DownloadManagerError.invalidHeader("no colon", reason: "a header is written 'Name: value'")) {
            try DownloadManager.Header(parsing: "no colon")
        }
    }
}
