import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Terminal columns of names, and cutting them without splitting a character.
@Suite struct DisplayWidthTests {
    @Test func wideAndCombiningCharactersCountAsTheyShow() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("写真.jpg") == 8)
        #expect(DisplayWidth.of("e\u{301}") == 1, "e + combining acute is one column")
        #expect(DisplayWidth.of("🎬") == 2)
        #expect(DisplayWidth.of("👩‍👩‍👧") == 2, "one cluster")
    }

    @Test func fittingCutsWholeCharactersAndEndsWithAnEllipsis() {
        #expect(DisplayWidth.fit("abcdef", to: 6) == "abcdef")
        #expect(DisplayWidth.fit("abcdef", to: 4) == "abc…")
        #expect(DisplayWidth.fit("写真写真", to: 4) == "写…")
        #expect(DisplayWidth.fit("abc", to: 0) == "")
        #expect(DisplayWidth.fit("abc", to: -7) == "")
        #expect(DisplayWidth.of(DisplayWidth.fit(String(repeating: "写", count: 1000), to: 9)) <= 9)
    }

    @Test func controlCharactersNeverReachTheTerminal() {
        #expect(DisplayWidth.fit("a\u{1B}[2Jb\nc\td", to: 80) == "a[2Jbcd")
        #expect(DisplayWidth.pad("ab", to: 4) == "ab  ")
    }
}
