import Crypto
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The digest a downloaded file must have, as aria2 writes it: `sha-256=HEX`.
///
/// ```swift
/// let checksum = try Checksum(parsing: "sha-256=2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
/// try manager.add(url, checksum: checksum)
/// ```
///
/// The hex digits are validated when the checksum is made (64 of them, either case) and kept in
/// lower case; `description` gives the text back in the same `sha-256=hex` form.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The hash functions a checksum can name.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        /// SHA-256 (aria2's `sha-256`; `sha256` is accepted too).
        case sha256 = "sha-256"

        /// How many bytes a digest of this algorithm has.
        public var digestLength: Int { 32 }
    }

    /// The hash function the digest is of.
    public let algorithm: Algorithm
    /// The expected digest, as lower-case hex.
    public let hex: String

    /// A SHA-256 checksum from its 64 hex digits (either case).
    ///
    /// - Throws: `Checksum.ParseError` for a wrong length or a character that is not a hex digit.
    public init(sha256 hex: String) throws(ParseError) {
        let digits = hex.trimmingCharacters(in: .whitespaces)
        guard digits.utf8.allSatisfy(\.isHexDigit) else { throw .notHex(hex) }
        guard digits.utf8.count == Algorithm.sha256.digestLength * 2 else {
            throw .wrongLength(expected: Algorithm.sha256.digestLength * 2, got: digits.utf8.count)
        }
        algorithm = .sha256
        self.hex = digits.lowercased()
    }

    /// Parses aria2's `ALGORITHM=HEX`: `sha-256=…` (or `sha256=…`, any case).
    ///
    /// - Throws: `Checksum.ParseError` naming what is wrong with `text`.
    public init(parsing text: String) throws(ParseError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let equals = trimmed.firstIndex(of: "=") else { throw .missingAlgorithm(text) }
        let name = trimmed[..<equals].lowercased()
        guard name == "sha-256" || name == "sha256" else { throw .unsupportedAlgorithm(String(trimmed[..<equals])) }
        try self.init(sha256: String(trimmed[trimmed.index(after: equals)...]))
    }

    /// `sha-256=hex`, as `init(parsing:)` reads it.
    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    /// The checksum of `data`.
    public static func sha256(of data: some DataProtocol) -> Checksum {
        Checksum(validHex: SHA256.hash(data: data).hexString)
    }

    /// The SHA-256 of the file at `path`, read once in 1 MiB chunks.
    ///
    /// - Throws: `FileReadError` when the file cannot be opened or read.
    public static func sha256(ofFileAt path: String) throws -> Checksum {
        let descriptor = SystemCall.open(at: AT_FDCWD, path, O_RDONLY | O_CLOEXEC, mode: 0)
        guard descriptor >= 0 else {
            throw FileReadError(path: path)
        }
        defer { SystemCall.close(descriptor) }
        return try sha256(reading: descriptor, path: path)
    }

    /// The SHA-256 of what `descriptor` reads from its start (with `pread`: its offset stays).
    static func sha256(reading descriptor: Int32, path: String) throws -> Checksum {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: off_t = 0
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, offset)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path)
            }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += off_t(count)
        }
        return Checksum(validHex: hasher.finalize().hexString)
    }

    private init(validHex: String) {
        algorithm = .sha256
        hex = validHex
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hex.
    fileprivate var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
