import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `Checksum`: aria2's text for every algorithm it reads, validated, and the digests through
/// swift-crypto (and JobKit's SHA-224).
@Suite struct ChecksumTests {
    static let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    /// The digests of "abc" (FIPS 180-4's examples; RFC 1321's for MD5).
    static let abcDigests: [Checksum.Algorithm: String] = [
        .md5: "900150983cd24fb0d6963f7d28e17f72",
        .sha1: "a9993e364706816aba3e25717850c26c9cd0d89d",
        .sha224: "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
        .sha256: abc,
        .sha384: "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
        .sha512:
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd"
            + "454d4423643ce80e2a9ac94fa54ca49f",
    ]

    @Test func aria2TextIsParsedAndGivenBack() throws {
        let checksum = try Checksum(parsing: "sha-256=\(Self.abc.uppercased())")
        #expect(checksum.algorithm == .sha256)
        #expect(checksum.hex == Self.abc)
        #expect(checksum.description == "sha-256=\(Self.abc)")
        #expect(try Checksum(parsing: "SHA256=\(Self.abc)") == checksum)
        #expect(try Checksum(sha256: Self.abc) == checksum)
    }

    @Test(arguments: Checksum.Algorithm.allCases)
    func everyAlgorithmParsesInBothSpellingsAndAnyCase(_ algorithm: Checksum.Algorithm) throws {
        let hex = try #require(Self.abcDigests[algorithm])
        let checksum = try Checksum(parsing: "\(algorithm.rawValue)=\(hex.uppercased())")
        #expect(checksum.algorithm == algorithm)
        #expect(checksum.hex == hex)
        #expect(checksum.description == "\(algorithm.rawValue)=\(hex)")
        let undashed = algorithm.rawValue.replacingOccurrences(of: "-", with: "").uppercased()
        #expect(try Checksum(parsing: "\(undashed)=\(hex)") == checksum)
        #expect(try Checksum(parsing: checksum.description) == checksum)
    }

    @Test(arguments: Checksum.Algorithm.allCases)
    func everyAlgorithmMatchesItsKnownVectorAndNotAnother(_ algorithm: Checksum.Algorithm) throws {
        let expected = try Checksum(algorithm, hex: try #require(Self.abcDigests[algorithm]))
        #expect(Checksum.digest(algorithm, of: Data("abc".utf8)) == expected)
        #expect(Checksum.digest(algorithm, of: Data("abd".utf8)) != expected)
        #expect(Checksum.digest(algorithm, of: Data("abc".utf8)).hex.count == algorithm.digestLength * 2)
    }

    @Test(arguments: Checksum.Algorithm.allCases)
    func aDigestOfTheWrongLengthIsRefusedNamingTheAlgorithm(_ algorithm: Checksum.Algorithm) {
        let other = algorithm == .sha256 ? Checksum.Algorithm.md5 : .sha256
        let hex = Self.abcDigests[other]!
        let error = #expect(throws: Checksum.ParseError.self) { try Checksum(parsing: "\(algorithm.rawValue)=\(hex)") }
        #expect(
            error
                == .wrongLength(algorithm: algorithm.rawValue, expected: algorithm.digestLength * 2, got: hex.count))
        #expect(
            error?.localizedDescription
                == "a \(algorithm.rawValue) checksum has \(algorithm.digestLength * 2) hex digits, got \(hex.count)")
    }

    @Test func badTextIsRefusedWithAReason() {
        #expect(throws: Checksum.ParseError.missingAlgorithm(Self.abc)) { try Checksum(parsing: Self.abc) }
        #expect(throws: Checksum.ParseError.unsupportedAlgorithm("crc32")) { try Checksum(parsing: "crc32=abc") }
        #expect(throws: Checksum.ParseError.unsupportedAlgorithm("sha-3")) { try Checksum(parsing: "sha-3=abc") }
        #expect(throws: Checksum.ParseError.wrongLength(algorithm: "sha-256", expected: 64, got: 3)) {
            try Checksum(parsing: "sha-256=abc")
        }
        let notHex = String(repeating: "g", count: 64)
        #expect(throws: Checksum.ParseError.notHex(notHex)) { try Checksum(sha256: notHex) }
        let error = #expect(throws: Checksum.ParseError.self) { try Checksum(parsing: "sha-2=abc") }
        #expect(
            error?.localizedDescription
                == "checksum algorithm 'sha-2' is not supported: use md5, sha-1, sha-224, sha-256, sha-384, sha-512")
    }

    @Test func theDigestOfBytesAndOfAFileAgree() throws {
        #expect(Checksum.sha256(of: Data("abc".utf8)).hex == Self.abc)
        let file = try scratchFolder().appendingPathComponent("big")
        let bytes = largePattern(3 << 20, seed: 1)
        try bytes.write(to: file)
        #expect(try Checksum.sha256(ofFileAt: file.path) == Checksum.sha256(of: bytes))
        for algorithm in Checksum.Algorithm.allCases {
            #expect(try Checksum.digest(algorithm, ofFileAt: file.path) == Checksum.digest(algorithm, of: bytes))
        }
        #expect(throws: FileReadError.self) { try Checksum.sha256(ofFileAt: file.path + ".missing") }
    }
}
