import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SwiftNIO's errors as one clean line each (issue 31: `connection reset (error set): Connection
/// refused) (errno: 111)`, `Couldn't find <none> in certificate`).
@Suite struct HTTPClientTransferErrorTests {
    private let url = URL(string: "https://files.example:8443/a.iso")!

    private func line(_ error: any Error, asked: URL? = nil) throws -> (String, URLError.Code) {
        let mapped = try #require(HTTPClientTransfer.transportError(error, url: url, asked: asked) as? TransportError)
        return (mapped.localizedDescription, mapped.code)
    }

    @Test func aRefusedConnectionSaysSoNamingTheHostAskedFor() throws {
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
        let (text, code) = try line(refused)
        #expect(code == .cannotConnectToHost)
        #expect(
            text
                == "transfer of https://files.example:8443/a.iso failed: the connection to files.example:8443 was "
                + "refused (URLError \(URLError.Code.cannotConnectToHost.rawValue))")
        let mirror = URL(string: "http://mirror.example/a.iso")!
        #expect(try line(refused, asked: mirror).0.contains("the connection to mirror.example was refused"))
        #expect(TransientFailure.isTransient(HTTPClientTransfer.transportError(refused, url: url)))
    }

    @Test func aCertificateForAnotherHostSaysSo() throws {
        let (text, code) = try line(NIOSSLExtraError.failedToValidateHostname)
        #expect(code == .serverCertificateUntrusted)
        #expect(text.contains("the server's certificate is not valid for files.example (its names do not match)"))
        #expect(!text.contains("<none>"))
        #expect(
            !TransientFailure.isTransient(
                HTTPClientTransfer.transportError(NIOSSLExtraError.failedToValidateHostname, url: url)))
    }
}
