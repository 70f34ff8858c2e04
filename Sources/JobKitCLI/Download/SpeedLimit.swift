import Foundation

/// A speed as aria2 writes it (`--max-download-limit=512K`): bytes a second, a whole number with an
/// optional `K` (1024) or `M` (1024 × 1024) suffix, either case; `0` means no limit.
enum SpeedLimit {
    /// The largest limit read: 1 TiB/s (no network is faster, and no product overflows).
    static let maximum: Int64 = 1 << 40

    /// Why `text` is not a speed.
    struct ParseError: Error, Equatable {
        var message: String
    }

    /// The bytes a second `text` says; nil for `0` (no limit).
    static func parse(_ text: String) throws(ParseError) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var digits = Substring(trimmed)
        var unit: Int64 = 1
        switch digits.last {
        case "k", "K":
            unit = 1 << 10
            digits = digits.dropLast()
        case "m", "M":
            unit = 1 << 20
            digits = digits.dropLast()
        default: break
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
            let number = Int64(digits)
        else {
            throw ParseError(
                message:
                    "'\(trimmed.prefix(40))' is not a speed: give bytes a second, like 500K, 2M or 1048576 (0: no limit)"
            )
        }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit)
        guard !overflow, bytes <= maximum else {
            throw ParseError(message: "'\(trimmed.prefix(40))' is more than the largest limit, 1048576M (1 TiB/s)")
        }
        return bytes == 0 ? nil : bytes
    }
}
