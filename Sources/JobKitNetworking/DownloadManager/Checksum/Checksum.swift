import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The digest a downloaded file must have, as aria2 writes it: `ALGORITHM=HEX`, with `md5`, `sha-1`,
/// `sha-224`, `sha-256`, `sha-384` or `sha-512`.
///
/// ```swift
/// let checksum = try Checksum(parsing: "sha-256=2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
/// try manager.add(url, checksum: checksum)
/// let legacy = try Checksum(parsing: "md5=5d41402abc4b2a76b9719d911017c592")
/// ```
///
/// The hex digits are validated when the checksum is made (as many as the algorithm's digest has,
/// either case) and kept in lower case; `description` gives the text back in aria2's spelling
/// (`sha-256=hex`). The digests come from swift-crypto (CryptoKit on Apple platforms, BoringSSL
/// elsewhere), SHA-224's from JobKit's own SHA-256 core, which swift-crypto lacks. MD5 and SHA-1 are
/// broken against a deliberate forger: they catch a damaged download, not a malicious server.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The hash functions a checksum can name.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        /// MD5 (aria2's `md5`): 16 bytes. Detects corruption only; not collision-resistant.
        case md5 = "md5"
        /// SHA-1 (aria2's `sha-1`; `sha1` is accepted too): 20 bytes. Not collision-resistant.
        case sha1 = "sha-1"
        /// SHA-224 (aria2's `sha-224`; `sha224` is accepted too): 28 bytes.
        case sha224 = "sha-224"
        /// SHA-256 (aria2's `sha-256`; `sha256` is accepted too): 32 bytes.
        case sha256 = "sha-256"
        /// SHA-384 (aria2's `sha-384`; `sha384` is accepted too): 48 bytes.
        case sha384 = "sha-384"
        /// SHA-512 (aria2's `sha-512`; `sha512` is accepted too): 64 bytes.
        case sha512 = "sha-512"

        /// The algorithm a name stands for: aria2's spelling (`sha-256`), or without the dash
        /// (`sha256`), in any case; nil for any other name.
        public init?(name: some StringProtocol) {
            let lowered = name.lowercased()
            if let algorithm = Algorithm(rawValue: lowered) {
                self = algorithm
            } else if let algorithm = Algorithm.allCases.first(where: {
                $0.rawValue.replacingOccurrences(of: "-", with: "") == lowered
            }) {
                self = algorithm
            } else {
                return nil
            }
        }

        /// How many bytes a digest of this algorithm has.
        public var digestLength: Int {
            switch self {
            case .md5: 16
            case .sha1: 20
            case .sha224: 28
            case .sha256: 32
            case .sha384: 48
            case .sha512: 64
            }
        }
    }

    /// The hash function the digest is of.
    public let algorithm: Algorithm
    /// The expected digest, as lower-case hex.
    public let hex: String

    /// A checksum of `algorithm` from its hex digits (either case; spaces around them are ignored).
    ///
    /// - Throws: `Checksum.ParseError.notHex` for a character that is not a hex digit,
    ///   `.wrongLength` for a number of digits other than twice the algorithm's `digestLength`.
    public init(_ algorithm: Algorithm, hex: String) throws(ParseError) {
        let digits = hex.trimmingCharacters(in: .whitespaces)
        guard digits.utf8.allSatisfy(\.isHexDigit) else { throw .notHex(hex) }
        guard digits.utf8.count == algorithm.digestLength * 2 else {
            throw .wrongLength(
                algorithm: algorithm.rawValue, expected: algorithm.digestLength * 2, got: digits.utf8.count)
        }
        self.algorithm = algorithm
        self.hex = digits.lowercased()
    }

    /// A SHA-256 checksum from its 64 hex digits (either case).
    ///
    /// - Throws: `Checksum.ParseError` for a wrong length or a character that is not a hex digit.
    public init(sha256 hex: String) throws(ParseError) {
        try self.init(.sha256, hex: hex)
    }

    /// Parses aria2's `ALGORITHM=HEX`: `md5=…`, `sha-1=…`, `sha-224=…`, `sha-256=…`, `sha-384=…` or
    /// `sha-512=…` (also without the dash, `sha256=…`; the name in any case).
    ///
    /// - Throws: `Checksum.ParseError` naming what is wrong with `text`: no `=`, an algorithm not
    ///   in the list, a character that is not a hex digit, or a digest of the wrong length for its
    ///   algorithm (`a sha-1 checksum has 40 hex digits, got 64`).
    public init(parsing text: String) throws(ParseError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let equals = trimmed.firstIndex(of: "=") else { throw .missingAlgorithm(text) }
        let name = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
        guard let algorithm = Algorithm(name: name) else { throw .unsupportedAlgorithm(name) }
        try self.init(algorithm, hex: String(trimmed[trimmed.index(after: equals)...]))
    }

    /// `algorithm=hex` in aria2's spelling, as `init(parsing:)` reads it.
    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    /// The SHA-256 checksum of `data`.
    public static func sha256(of data: some DataProtocol) -> Checksum {
        digest(.sha256, of: data)
    }

    /// The checksum of `algorithm` of `data`.
    ///
    /// ```swift
    /// let expected = Checksum.digest(.sha1, of: Data("abc".utf8))   // sha-1=a9993e36…
    /// ```
    public static func digest(_ algorithm: Algorithm, of data: some DataProtocol) -> Checksum {
        var hasher = Hasher(algorithm)
        for region in data.regions { region.withUnsafeBytes { hasher.update($0) } }
        return hasher.finalize()
    }

    /// The SHA-256 of the file at `path`, read once in 1 MiB chunks.
    ///
    /// - Throws: `FileReadError` when the file cannot be opened or read.
    public static func sha256(ofFileAt path: String) throws -> Checksum {
        try digest(.sha256, ofFileAt: path)
    }

    /// The checksum of `algorithm` of the file at `path`, read once in 1 MiB chunks.
    ///
    /// - Throws: `FileReadError` when the file cannot be opened or read.
    public static func digest(_ algorithm: Algorithm, ofFileAt path: String) throws -> Checksum {
        let descriptor = SystemCall.open(at: AT_FDCWD, path, O_RDONLY | O_CLOEXEC, mode: 0)
        guard descriptor >= 0 else {
            throw FileReadError(path: path)
        }
        let file = POSIXDownloadFile(descriptor: descriptor, path: path)
        defer { file.close() }
        return try compute(algorithm, reading: file, path: path)
    }

    /// A checksum whose hex is known to be valid (computed here).
    init(_ algorithm: Algorithm, validHex: String) {
        self.algorithm = algorithm
        hex = validHex
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
