import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// Text from servers and journals reaches the terminal with its control characters escaped.
@Suite struct ControlCharacterEscapingTests {
    @Test func controlCharactersAreEscapedAndTheRestIsKept() {
        #expect("plain é 名".escapingControlCharacters == "plain é 名")
        #expect("a\nb\tc\r".escapingControlCharacters == #"a\nb\tc\r"#)
        #expect("\u{1B}[2J\u{7F}\u{9B}x".escapingControlCharacters == #"\u{1B}[2J\u{7F}\u{9B}x"#)
        #expect("".escapingControlCharacters == "")
    }

    @Test func aJournalProblemNamesTheValueEscaped() throws {
        let text = """
            {"format":"jobkit-downloads","next":2,"version":1}
            {"id":1,"name":"evil\\u001b[2J","op":"add","url":"http://example.com/x"}
            {"id":1,"op":"state","state":"\\u001b]0;owned\\u0007"}
            """
        let contents = try DownloadJournal.parse(Data(text.utf8))
        #expect(contents.entries.isEmpty)
        #expect(contents.problems.count == 1, "\(contents.problems)")
        #expect(!contents.problems.joined().contains("\u{1B}"), "\(contents.problems)")
    }
}
