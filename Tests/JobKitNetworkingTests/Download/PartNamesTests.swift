import Testing

@testable import JobKitNetworking

@Suite struct PartNamesTests {
    @Test func aShortNameKeepsItsSidecarsBesideIt() {
        let names = PartNames(for: "a.bin")
        #expect(names.all == ["a.bin.part", "a.bin.part.meta", "a.bin.part.meta.tmp"])
    }

    /// A name too long for the suffixes: its sidecars are named by its SHA-256, in lower-case hex, as
    /// every earlier version named them (a `.part` left by one is found by the next).
    @Test func aLongNamesSidecarsAreNamedByItsHash() {
        let longest = String(repeating: "n", count: PartNames.longestPlainName)
        #expect(PartNames(for: longest).part == longest + ".part")
        let names = PartNames(for: String(repeating: "n", count: 250))
        #expect(names.part == ".jobkit-part-213b83271b358ed960938751e3f3f6d8.part")
        #expect(names.metadataTemporary == ".jobkit-part-213b83271b358ed960938751e3f3f6d8.part.meta.tmp")
    }
}
