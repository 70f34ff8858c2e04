import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Which form the display takes, and what each form writes.
@Suite struct TransferDisplayTests {
    @Test func modeFollowsTheOptionsTheTerminalAndNoColor() {
        func mode(json: Bool = false, quiet: Bool = false, tty: Bool = true, _ environment: [String: String] = [:])
            -> DisplayMode
        {
            DisplayMode.choose(json: json, quiet: quiet, isTerminal: tty, environment: environment)
        }
        #expect(mode() == .live)
        #expect(mode(tty: false) == .lines)
        #expect(mode(["NO_COLOR": "1"]) == .lines)
        #expect(mode(["NO_COLOR": ""]) == .live, "an empty NO_COLOR does not count (no-color.org)")
        #expect(mode(["TERM": "dumb"]) == .lines)
        #expect(mode(json: true) == .json)
        #expect(mode(quiet: true) == .quiet)
    }

    @Test func linesModeWritesOneLinePerStatusChangeAndNothingForProgress() {
        let output = Output()
        let display = TransferDisplay(mode: .lines, write: output.append)
        var row = TransferRow(id: 1, name: "a", totalBytes: 4)
        display.update(row)
        row.status = .running
        display.update(row)
        for done in 1...4 {
            row.bytesDone = Int64(done)
            display.update(row)
        }
        row.status = .completed
        display.update(row)
        display.message("all done")
        display.finish()
        display.update(TransferRow(id: 2, name: "late", status: .running))
        #expect(output.text == "started a (4 B)\ncompleted a (4 B)\nall done\n")
    }

    @Test func jsonModeWritesStatusEventsAtOnceAndQuietWritesNothing() {
        let output = Output()
        let display = TransferDisplay(mode: .json, write: output.append)
        display.update(TransferRow(id: 1, name: "a", totalBytes: 4, status: .running))
        display.update(TransferRow(id: 1, name: "a", bytesDone: 4, totalBytes: 4, status: .completed))
        display.message("not JSON")
        display.finish()
        let lines = output.text.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("{") })
        #expect(lines[1].contains(#""event":"completed""#))

        let quiet = Output()
        let silent = TransferDisplay(mode: .quiet, write: quiet.append)
        silent.update(TransferRow(id: 1, name: "a", status: .failed(reason: "x")))
        silent.message("m")
        silent.finish()
        #expect(quiet.text.isEmpty)
    }

    @Test func aShortTerminalGetsFewerLiveRows() {
        let output = Output()
        let display = TransferDisplay(mode: .live, write: output.append, width: { 60 }, height: { 4 })
        for id in 1...5 { display.update(TransferRow(id: id, name: "f\(id)", totalBytes: 4, status: .running)) }
        display.finish()
        var terminal = TerminalEmulator()
        terminal.write(output.text)
        #expect(terminal.screen.count == 3, "two lines, one of them '… N more', and the total: \(terminal.screen)")
    }

    @Test func liveModeFinishesWithTheLastFrame() {
        let output = Output()
        let display = TransferDisplay(mode: .live, write: output.append, width: { 60 })
        display.update(TransferRow(id: 1, name: "a", totalBytes: 4, status: .running))
        display.update(TransferRow(id: 1, name: "a", bytesDone: 4, totalBytes: 4, status: .completed))
        display.finish()
        var terminal = TerminalEmulator()
        terminal.write(output.text)
        #expect(terminal.screen.first == "✓ a  4 B")
        #expect(terminal.screen.last?.hasPrefix("total") == true && terminal.screen.last?.contains("1/1 done") == true)
    }
}

/// Text written by a display, collected (tests call the display on one thread).
// Safety: written and read by one test's thread only.
final class Output: @unchecked Sendable {
    private(set) var text = ""

    func append(_ more: String) { text += more }
}
