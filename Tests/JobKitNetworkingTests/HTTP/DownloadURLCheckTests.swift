import Foundation
import Testing

@testable import JobKitNetworking

/// The one check every URL passes before a transport sees it (issue 31: a port beyond 65535 trapped
/// in SwiftNIO's `SocketAddress`).
@Suite struct DownloadURLCheckTests {
    private func problem(_ text: String) throws -> DownloadURLCheck.Problem? {
        DownloadURLCheck.problem(with: try #require(URL(string: text)))
    }

    @Test func aPortFromOneTo65535OrNoneIsDownloadable() throws {
        #expect(try problem("http://127.0.0.1:8080/x") == nil)
        #expect(try problem("https://host:65535/x") == nil)
        #expect(try problem("http://host:1/") == nil)
        #expect(try problem("http://host/x") == nil)
        #expect(try problem("http://host:/x") == nil, "an empty port is the default one (RFC 3986)")
        #expect(try problem("http://[::1]:8080/") == nil)
        #expect(try problem("HTTP://HOST/x") == nil)
        #expect(try problem("http://alice:p%40ss%3Aword@host:8080/f") == nil)
    }

    @Test func aPortOutsideOneTo65535IsRefusedNamingIt() throws {
        #expect(try problem("http://127.0.0.1:99999/x") == .invalidPort("99999"))
        #expect(try problem("http://127.0.0.1:70000/y") == .invalidPort("70000"))
        #expect(try problem("http://[::1]:99999/") == .invalidPort("99999"))
        #expect(try problem("http://host:0/") == .invalidPort("0"))
        #expect(try problem("http://host:65536/") == .invalidPort("65536"))
        let longest = "http://host/" + String(repeating: "a", count: DownloadURLCheck.maximumLength - 12)
        #expect(try problem(longest) == nil)
        #expect(try problem(longest + "b") == .tooLong(DownloadURLCheck.maximumLength + 1))
        #expect(try problem("http://user:pw@127.0.0.1:99999/") == .invalidPort("99999"))
        // Foundation reads no port from these (nil): they would go to port 80 unnoticed.
        #expect(try problem("http://host:99999999999999999999999/") == .invalidPort("99999999999999999999"))
        #expect(try problem("http://host:9223372036854775807/") == .invalidPort("9223372036854775807"))
        #expect(DownloadURLCheck.Problem.invalidPort("99999").reason.contains("'99999'"))
    }

    @Test func notHTTPOrNoHostIsUnsupported() throws {
        #expect(try problem("ftp://host/x") == .unsupported)
        #expect(try problem("file:///etc/passwd") == .unsupported)
        #expect(try problem("http:///x") == .unsupported)
    }

    @Test func theManagerRefusesABadPortAsTheAPIsArgument() throws {
        #expect(throws: DownloadManagerError.self) {
            try DownloadManagerStateMachine<Never>.checkDownloadable(URL(string: "http://127.0.0.1:99999/x")!)
        }
        do {
            try DownloadManagerStateMachine<Never>.checkDownloadable(URL(string: "http://127.0.0.1:99999/x")!)
        } catch {
            #expect(
                error.localizedDescription
                    == "cannot download http://127.0.0.1:99999/x: the port '99999' is not a number from 1 to 65535")
        }
    }
}
