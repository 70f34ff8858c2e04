import Crypto
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension Checksum {
    /// One of the algorithms' hash functions, fed incrementally: swift-crypto's for MD5, SHA-1 and
    /// the SHA-2 family, `SHA224` (here) for SHA-224.
    struct Hasher {
        private enum Function {
            case md5(Insecure.MD5)
            case sha1(Insecure.SHA1)
            case sha224(SHA224)
            case sha256(SHA256)
            case sha384(SHA384)
            case sha512(SHA512)
        }

        let algorithm: Algorithm
        private var function: Function

        /// A hasher of `algorithm` that has seen nothing.
        init(_ algorithm: Algorithm) {
            self.algorithm = algorithm
            switch algorithm {
            case .md5: function = .md5(Insecure.MD5())
            case .sha1: function = .sha1(Insecure.SHA1())
            case .sha224: function = .sha224(SHA224())
            case .sha256: function = .sha256(SHA256())
            case .sha384: function = .sha384(SHA384())
            case .sha512: function = .sha512(SHA512())
            }
        }

        /// Hashes `bytes` after what came before.
        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            switch function {
            case .md5(var hash):
                hash.update(bufferPointer: bytes)
                function = .md5(hash)
            case .sha1(var hash):
                hash.update(bufferPointer: bytes)
                function = .sha1(hash)
            case .sha224(var hash):
                hash.update(bytes)
                function = .sha224(hash)
            case .sha256(var hash):
                hash.update(bufferPointer: bytes)
                function = .sha256(hash)
            case .sha384(var hash):
                hash.update(bufferPointer: bytes)
                function = .sha384(hash)
            case .sha512(var hash):
                hash.update(bufferPointer: bytes)
                function = .sha512(hash)
            }
        }

        /// The checksum of everything hashed.
        func finalize() -> Checksum {
            let digest: [UInt8]
            switch function {
            case .md5(let hash): digest = Array(hash.finalize())
            case .sha1(let hash): digest = Array(hash.finalize())
            case .sha224(var hash): digest = hash.finalize()
            case .sha256(let hash): digest = Array(hash.finalize())
            case .sha384(let hash): digest = Array(hash.finalize())
            case .sha512(let hash): digest = Array(hash.finalize())
            }
            return Checksum(algorithm, validHex: digest.hexString)
        }
    }

    /// The checksum of `algorithm` of what `file` reads from its start (positional reads: its
    /// offset stays), in 1 MiB chunks.
    static func compute(_ algorithm: Algorithm, reading file: any DownloadFile, path: String) throws -> Checksum {
        var hasher = Hasher(algorithm)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            guard case .success(let count) = file.read(into: buffer, at: offset) else {
                throw FileReadError(path: path)
            }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return hasher.finalize()
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hex.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
