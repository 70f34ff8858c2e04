import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `Checksum`: aria2's text, validated, and SHA-256 through swift-crypto.
@Suite struct ChecksumTests {
    static let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    @Test func aria2TextIsParsedAndGivenBack() throws {
        let checksum = try Checksum(parsing: "sha-256=\(Self.abc.uppercased())")
        #expect(checksum.algorithm == .sha256)
        #expect(checksum.hex == Self.abc)
        #expect(checksum.description == "sha-256=\(Self.abc)")
        #expect(try Checksum(parsing: "SHA256=\(Self.abc)") == checksum)
        #expect(try Checksum(sha256: Self.abc) == checksum)
    }

    @Test func badTextIsRefusedWithAReason() {
        #expect(throws: Checksum.ParseError.missingAlgorithm(Self.abc)) { try Checksum(parsing: Self.abc) }
        #expect(throws: Checksum.ParseError.unsupportedAlgorithm("md5")) { try Checksum(parsing: "md5=abc") }
        #expect(throws: Checksum.ParseError.wrongLength(expected: 64, got: 3)) { try Checksum(parsing: "sha-256=abc") }
        let notHex = String(repeating: "g", count: 64)
        #expect(throws: Checksum.ParseError.notHex(notHex)) { try Checksum(sha256: notHex) }
        let error = #expect(throws: Checksum.ParseError.self) { try Checksum(parsing: "sha-1=abc") }
        #expect(error?.localizedDescription == "checksum algorithm 'sha-1' is not supported: use sha-256")
    }

    @Test func theDigestOfBytesAndOfAFileAgree() throws {
        #expect(Checksum.sha256(of: Data("abc".utf8)).hex == Self.abc)
        let file = try scratchFolder().appendingPathComponent("big")
        let bytes = largePattern(3 << 20, seed: 1)
        try bytes.write(to: file)
        #expect(try Checksum.sha256(ofFileAt: file.path) == Checksum.sha256(of: bytes))
        #expect(throws: FileReadError.self) { try Checksum.sha256(ofFileAt: file.path + ".missing") }
    }
}
