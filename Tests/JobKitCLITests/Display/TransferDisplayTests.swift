import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitCLI

/// Which form the display takes, and what each form writes.
@MainActor @Suite struct TransferDisplayTests {
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

    @Test func jobStateLinesShowEveryStateAndProgressEveryTwentyPercent() {
        let output = Output()
        let display = TransferDisplay(mode: .lines, lineStyle: .jobStates, write: output.append)
        var row = TransferRow(id: 3, name: "download 3", totalBytes: 100)
        display.update(row)
        row.status = .running
        for done in [0, 5, 20, 50, 99, 100] as [Int64] {
            row.bytesDone = done
            display.update(row)
        }
        row.status = .completed
        display.update(row)
        display.update(TransferRow(id: 4, name: "download 4", status: .failed(reason: "")))
        display.update(TransferRow(id: 5, name: "download\u{1B}5", status: .cancelled))
        #expect(
            output.text == """
                  download 3: pending
                  download 3: running 0%
                  download 3: running 20%
                  download 3: running 50%
                  download 3: running 99%
                  download 3: running 100%
                  download 3: 100% completed
                  download 4: failed
                  download5: cancelled

                """)
    }

    @Test func jobStateRowsOfAnUnknownOrEmptySizeAndARestartStayInBounds() {
        #expect(TransferEventFormat.percent(of: TransferRow(id: 1, name: "a", bytesDone: 7, totalBytes: nil)) == 0)
        #expect(TransferEventFormat.percent(of: TransferRow(id: 1, name: "a", bytesDone: 7, totalBytes: 0)) == 0)
        #expect(TransferEventFormat.percent(of: TransferRow(id: 1, name: "a", bytesDone: .max, totalBytes: 1)) == 100)
        #expect(TransferEventFormat.percent(of: TransferRow(id: 1, name: "a", bytesDone: -5, totalBytes: 1)) == 0)
        let output = Output()
        let display = TransferDisplay(mode: .lines, lineStyle: .jobStates, write: output.append)
        display.update(TransferRow(id: 1, name: "a", bytesDone: 60, totalBytes: 100, status: .running))
        display.update(TransferRow(id: 1, name: "a", totalBytes: 100, status: .queued))
        display.update(TransferRow(id: 1, name: "a", bytesDone: 61, totalBytes: 100, status: .running))
        #expect(output.text.split(separator: "\n") == ["  a: running 60%", "  a: pending", "  a: running 61%"])
    }

    @Test func theDemosDownloadsAreRowsOfTheOneDisplay() {
        let output = Output()
        let display = TransferDisplay(mode: .live, lineStyle: .jobStates, write: output.append, width: { 60 })
        let states: [JobState] = [.pending, .running(fraction: 0.5), .finished]
        for state in states { display.update(DownloadScenario.row(id: 1, state: state, size: 4)) }
        display.update(DownloadScenario.row(id: 2, state: .running(fraction: 7), size: 4))
        display.finish()
        var terminal = TerminalEmulator()
        terminal.write(output.text)
        #expect(terminal.screen.first == "✓ download 1  4 B")
        #expect(display.rows.row(id: 2)?.bytesDone == 4, "a fraction past 1 is the whole file, no more")
    }
}

/// Text written by a display, collected (tests call the display on one thread).
// Safety: written and read by one test's thread only.
final class Output: @unchecked Sendable {
    private(set) var text = ""

    func append(_ more: String) { text += more }
}
