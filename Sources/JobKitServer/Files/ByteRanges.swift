/// What a `Range` header asks of a representation of a known length, per RFC 9110 §14.
///
/// A pure value: no I/O, so every case of the standard is tested alone.
///
/// ```swift
/// ByteRanges.evaluate("bytes=-5", length: 20)    // .partial([15...19])
/// ByteRanges.evaluate("bytes=20-", length: 20)   // .unsatisfiable
/// ByteRanges.evaluate("items=0-5", length: 20)   // .whole (an unknown unit is ignored)
/// ```
enum ByteRanges: Equatable, Sendable {
    /// Send the whole representation with 200: no `Range`, an unknown unit, a malformed header, more
    /// ranges than `maximumRangeCount`, or an empty representation.
    case whole
    /// Send these ranges with 206: each within `0..<length`, sorted, overlapping and adjacent ones merged.
    case partial([ClosedRange<Int>])
    /// Answer 416 with `Content-Range: bytes */length`.
    case unsatisfiable

    /// More ranges than this in one header are ignored (the whole representation is sent instead), so that a
    /// request cannot make the server produce thousands of parts.
    static let maximumRangeCount = 16

    /// Evaluates `header` (the value of `Range`, or nil) against a representation of `length` bytes.
    static func evaluate(_ header: String?, length: Int) -> ByteRanges {
        // An empty representation has no byte to select: the header is ignored (a server MAY ignore `Range`).
        guard let header, length > 0 else { return .whole }
        let trimmed = header.trimmingSpaces()
        guard let equals = trimmed.firstIndex(of: "=") else { return .whole }
        guard trimmed[..<equals].trimmingSpaces().lowercased() == "bytes" else { return .whole }
        let specs = trimmed[trimmed.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingSpaces() }
            .filter { !$0.isEmpty }
        guard !specs.isEmpty, specs.count <= maximumRangeCount else { return .whole }
        var satisfiable: [ClosedRange<Int>] = []
        for spec in specs {
            switch RangeSpec(spec) {
            case nil:
                return .whole  // a syntactically invalid set: ignore the header
            case .some(let range):
                if let resolved = range.resolved(length: length) { satisfiable.append(resolved) }
            }
        }
        return satisfiable.isEmpty ? .unsatisfiable : .partial(merged(satisfiable))
    }

    /// Sorts the ranges and merges overlapping or adjacent ones (RFC 9110 §14.2 permits coalescing).
    static func merged(_ ranges: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var result: [ClosedRange<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound &+ 1 {
                result[result.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// One `range-spec`: `first-last`, `first-` or `-suffix`.
    private enum RangeSpec {
        case from(Int, through: Int?)
        case suffix(Int)

        init?(_ text: Substring) {
            guard let dash = text.firstIndex(of: "-") else { return nil }
            let first = text[..<dash].trimmingSpaces()
            let last = text[text.index(after: dash)...].trimmingSpaces()
            if first.isEmpty {
                guard let suffix = Self.number(last) else { return nil }
                self = .suffix(suffix)
            } else {
                guard let start = Self.number(first) else { return nil }
                if last.isEmpty {
                    self = .from(start, through: nil)
                } else {
                    guard let end = Self.number(last), start <= end else { return nil }
                    self = .from(start, through: end)
                }
            }
        }

        /// The range within `0..<length`, or nil when it is not satisfiable.
        func resolved(length: Int) -> ClosedRange<Int>? {
            switch self {
            case .from(let start, let end):
                guard start < length else { return nil }
                return start...min(end ?? (length - 1), length - 1)
            case .suffix(let count):
                guard count > 0, length > 0 else { return nil }
                return max(0, length - count)...(length - 1)
            }
        }

        /// Digits only; a value past `Int.max` saturates (a last position that large means "to the end").
        private static func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            var value = 0
            for digit in text.utf8 {
                let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int(digit - UInt8(ascii: "0")))
                if overflow1 || overflow2 { return .max }
                value = sum
            }
            return value
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpaces() -> Substring {
        let view = Substring(self)
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = view.firstIndex(where: { !isSpace($0) }),
            let end = view.lastIndex(where: { !isSpace($0) })
        else { return view[view.endIndex...] }
        return Substring(view[start...end])
    }
}
