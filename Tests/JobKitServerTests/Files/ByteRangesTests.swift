import Testing

@testable import JobKitServer

/// RFC 9110 §14 range evaluation, without I/O.
@Suite struct ByteRangesTests {
    @Test func suffixRangeSelectsTheLastBytes() {
        #expect(ByteRanges.evaluate("bytes=-5", length: 20) == .partial([15...19]))
        #expect(ByteRanges.evaluate("bytes=-50", length: 20) == .partial([0...19]))
    }

    @Test func rangesStartingPastTheEndAreUnsatisfiable() {
        #expect(ByteRanges.evaluate("bytes=25-30", length: 20) == .unsatisfiable)
        #expect(ByteRanges.evaluate("bytes=20-", length: 20) == .unsatisfiable)
        #expect(ByteRanges.evaluate("bytes=-0", length: 20) == .unsatisfiable)
    }

    @Test func lastPositionIsClampedToTheLength() {
        #expect(ByteRanges.evaluate("bytes=5-100", length: 20) == .partial([5...19]))
        #expect(ByteRanges.evaluate("bytes=0-99999999999999999999999999", length: 20) == .partial([0...19]))
        #expect(ByteRanges.evaluate("bytes=19-", length: 20) == .partial([19...19]))
    }

    @Test func severalRangesAreSortedAndOverlapsMerged() {
        #expect(ByteRanges.evaluate("bytes=10-12, 0-2", length: 20) == .partial([0...2, 10...12]))
        #expect(ByteRanges.evaluate("bytes=0-5,3-8,9-9", length: 20) == .partial([0...9]))
        #expect(ByteRanges.evaluate("bytes=0-1,30-40", length: 20) == .partial([0...1]), "unsatisfiable ones drop")
    }

    @Test func unknownUnitsAndMalformedHeadersAreIgnored() {
        for header in ["items=0-5", "bytes=abc", "bytes=5-1", "bytes=", "bytes", "bytes=1-2-3", "bytes=--5", "0-5"] {
            #expect(ByteRanges.evaluate(header, length: 20) == .whole, "\(header)")
        }
        #expect(ByteRanges.evaluate(nil, length: 20) == .whole)
        #expect(ByteRanges.evaluate("BYTES = 0-1", length: 20) == .partial([0...1]), "the unit is case-insensitive")
    }

    @Test func tooManyRangesOrAnEmptyFileSendTheWhole() {
        let many = "bytes=" + (0..<17).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(ByteRanges.evaluate(many, length: 100) == .whole)
        #expect(ByteRanges.evaluate("bytes=0-5", length: 0) == .whole)
    }
}
