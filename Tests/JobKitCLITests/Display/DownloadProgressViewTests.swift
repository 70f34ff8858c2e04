import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// The downloads scenario's display, rendered to strings: frames on a terminal, lines into a pipe.
@Suite struct DownloadProgressViewTests {
    /// What a terminal shows after `text` is written to it: a minimal emulator of the escapes the view
    /// uses (cursor up, clear line, clear to the end of the screen).
    private func screen(after text: String) -> [String] {
        var lines = [""]
        var row = 0
        var rest = Substring(text)
        while let character = rest.first {
            if character == "\u{1B}" {
                let command = rest.dropFirst(2).prefix { !$0.isLetter }
                let letter = rest.dropFirst(2 + command.count).first
                rest = rest.dropFirst(3 + command.count)
                switch letter {
                case "A": row = max(0, row - (Int(command) ?? 1))
                case "K": lines[row] = ""
                case "J": lines.removeSubrange((row + 1)...); lines[row] = ""
                default: Issue.record("unexpected escape \(command)\(letter.map(String.init) ?? "")")
                }
                continue
            }
            rest = rest.dropFirst()
            if character == "\n" {
                row += 1
                if row == lines.count { lines.append("") }
            } else {
                lines[row].append(character)
            }
        }
        return lines.filter { !$0.isEmpty }
    }

    @Test func aTerminalKeepsOneLiveLinePerDownloadAndAGrowingCompletedList() {
        var view = DownloadProgressView(mode: .live)
        var output = ""
        output += view.update(id: 1, state: .pending)
        output += view.update(id: 2, state: .pending)
        output += view.update(id: 1, state: .running(fraction: 0.42))
        #expect(screen(after: output) == ["  download 1: running 42%", "  download 2: pending"])
        output += view.update(id: 1, state: .running(fraction: 1))
        #expect(screen(after: output) == ["  download 1: running 100%", "  download 2: pending"])
        output += view.update(id: 1, state: .finished)
        output += view.update(id: 2, state: .running(fraction: 0.5))
        #expect(screen(after: output) == ["  download 1: 100% completed", "  download 2: running 50%"])
        output += view.update(id: 2, state: .finished)
        #expect(screen(after: output) == ["  download 1: 100% completed", "  download 2: 100% completed"])
    }

    @Test func aTerminalFrameRedrawsOnlyTheLiveLines() {
        var view = DownloadProgressView(mode: .live)
        _ = view.update(id: 1, state: .pending)
        _ = view.update(id: 2, state: .pending)
        let frame = view.update(id: 2, state: .running(fraction: 0.1))
        #expect(frame.hasPrefix("\u{1B}[2A"), "moves up over the two live lines")
        #expect(frame.components(separatedBy: "\n").count - 1 == 2, "and writes two lines, never more")
        #expect(view.update(id: 2, state: .running(fraction: 0.101)).isEmpty, "the same percent draws nothing")
    }

    @Test func aPipeGetsOneLinePerChangeWithProgressEveryTwentyPercentAndAHundred() {
        var view = DownloadProgressView(mode: .lines)
        let states: [JobState] = [
            .pending, .running(fraction: 0), .running(fraction: 0.05), .running(fraction: 0.2),
            .running(fraction: 0.5), .running(fraction: 0.99), .running(fraction: 1), .finished,
        ]
        let output = states.map { view.update(id: 3, state: $0) }.joined()
        #expect(
            output == """
                  download 3: pending
                  download 3: running 0%
                  download 3: running 20%
                  download 3: running 50%
                  download 3: running 99%
                  download 3: running 100%
                  download 3: 100% completed

                """)
        #expect(!output.contains("\u{1B}"), "no escapes into a pipe")
    }

    @Test func aFailedDownloadSaysHowItEnded() {
        var view = DownloadProgressView(mode: .lines)
        _ = view.update(id: 4, state: .pending)
        #expect(view.update(id: 4, state: .cancelled) == "  download 4: \(JobState.cancelled)\n")
    }
}
