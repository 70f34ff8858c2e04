import Foundation

extension Checksum {
    /// Why a checksum's text was refused.
    public enum ParseError: Error, LocalizedError, Equatable, Sendable {
        /// Not `ALGORITHM=HEX`.
        case missingAlgorithm(String)
        /// An algorithm other than those of `Checksum.Algorithm`.
        case unsupportedAlgorithm(String)
        /// A digest of the wrong number of hex digits for its algorithm (named as aria2 spells it).
        case wrongLength(algorithm: String, expected: Int, got: Int)
        /// A character that is not a hex digit.
        case notHex(String)

        public var errorDescription: String? {
            switch self {
            case .missingAlgorithm(let text):
                "checksum '\(Self.shown(text))' is not ALGORITHM=HEX (for example sha-256=…)"
            case .unsupportedAlgorithm(let name):
                "checksum algorithm '\(Self.shown(name))' is not supported: use "
                    + Checksum.Algorithm.allCases.map(\.rawValue).joined(separator: ", ")
            case .wrongLength(let algorithm, let expected, let got):
                "a \(Self.shown(algorithm)) checksum has \(expected) hex digits, got \(got)"
            case .notHex(let text):
                "checksum '\(Self.shown(text))' has a character that is not a hex digit"
            }
        }

        private static func shown(_ text: String) -> String {
            text.count > 80 ? text.prefix(80) + "…" : text
        }
    }
}
