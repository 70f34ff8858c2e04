import Foundation
import Testing

@testable import JobKitNetworking

/// `SHA224`: FIPS 180-4's examples (and the padding's edges), whole and fed in pieces.
@Suite struct SHA224Tests {
    @Test(arguments: [
        ("", "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f"),
        ("abc", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525"
        ),
        (String(repeating: "x", count: 55), "2791c7d25712eb5be75c30b2d45f6fce96e5a50ee64cf373056704a3"),
        (String(repeating: "x", count: 56), "82199913c2712c46707ad08c8bfa2a69f68e9092dc5cdfaaaf07d77f"),
        (String(repeating: "x", count: 64), "08c3050e95fe11eacb9dc7824bf6a92bcf2d59c21701321fba0e62c5"),
    ])
    func fipsExamples(_ message: String, _ digest: String) {
        #expect(SHA224.hash(Array(message.utf8)).hexString == digest)
    }

    @Test func aMillionAsFedInUnevenPieces() {
        var hasher = SHA224()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var left = 1_000_000
        var size = 1
        while left > 0 {
            let count = min(size, left, piece.count)
            hasher.update(Array(piece.prefix(count)))
            left -= count
            size = size % 997 + 7
        }
        #expect(hasher.finalize().hexString == "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67")
    }
}
