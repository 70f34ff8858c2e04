import Dispatch
import Foundation

/// The transfer display of `jobkit download` and `jobkit publish`: rows in, text out, in the chosen mode.
///
/// A main-actor class (the commands' handlers all run there); it writes through `write` on the main
/// actor too. Live frames and JSON progress events are throttled to 10 a second by `RedrawThrottle`;
/// status changes are never dropped.
@MainActor
final class TransferDisplay {
    let mode: DisplayMode
    /// The plain lines of `.lines` mode.
    let lineStyle: TransferEventFormat.LineStyle
    private let write: (String) -> Void
    private let width: () -> Int
    private let height: () -> Int?
    private var board = TransferBoard()
    private var screen = LiveScreen()
    private var throttle = RedrawThrottle()
    private var pendingMessages: [String] = []
    /// Rows with progress not yet sent as JSON.
    private var unsentProgress: [Int: TransferBoard.Event] = [:]
    /// The percent of each running row's last `.jobStates` line.
    private var printedPercents: [Int: Int] = [:]
    private var isFinished = false

    /// A display writing through `write`; `width` and `height` are read at every live frame (the terminal
    /// may be resized). A live frame has at most 12 rows, and fewer on a short terminal (`height - 2`), so
    /// that the cursor never has to move above the top of the screen.
    init(
        mode: DisplayMode, lineStyle: TransferEventFormat.LineStyle = .transfers, write: @escaping (String) -> Void,
        width: @escaping () -> Int = { 80 }, height: @escaping () -> Int? = { nil }
    ) {
        self.mode = mode
        self.lineStyle = lineStyle
        self.write = write
        self.width = width
        self.height = height
    }

    /// The display of `jobkit` on its standard output.
    static func standard(
        json: Bool, quiet: Bool, lineStyle: TransferEventFormat.LineStyle = .transfers
    ) -> TransferDisplay {
        let mode = DisplayMode.choose(
            json: json, quiet: quiet, isTerminal: StandardOutput.isTerminal,
            environment: ProcessInfo.processInfo.environment)
        return TransferDisplay(
            mode: mode, lineStyle: lineStyle, write: { StandardOutput.write($0) },
            width: { StandardOutput.columns ?? EnvironmentColumns.value ?? 80 },
            height: { StandardOutput.lines })
    }

    /// Every row so far, and the totals.
    var rows: TransferBoard { board }

    /// Shows `row` (a new one, or a change of one already shown).
    func update(_ row: TransferRow) {
        guard !isFinished, let event = board.update(row) else { return }
        switch mode {
        case .quiet:
            return
        case .lines:
            if let line = plainLine(for: event) { write(line + "\n") }
        case .json:
            if event.kind == .progress {
                unsentProgress[row.id] = event
                requestFrame()
            } else {
                unsentProgress[row.id] = nil
                emitJSON(event)
            }
        case .live:
            requestFrame()
        }
    }

    /// A line of its own: above the live lines on a terminal, as it is into a pipe, never in JSON or quiet.
    func message(_ text: String) {
        guard !isFinished else { return }
        switch mode {
        case .quiet, .json: return
        case .lines: write(text + "\n")
        case .live:
            pendingMessages.append(text)
            requestFrame()
        }
    }

    /// Draws what is pending (the last frame, before the command prints its summary); after this the
    /// display writes nothing more, whatever arrives.
    func finish() {
        guard !isFinished else { return }
        draw(at: Self.now())
        isFinished = true
    }

    private func plainLine(for event: TransferBoard.Event) -> String? {
        switch lineStyle {
        case .transfers:
            return TransferEventFormat.plainLine(for: event)
        case .jobStates:
            guard event.row.status == .running else {
                printedPercents[event.row.id] = nil
                return event.kind == .status ? TransferEventFormat.jobStateLine(for: event.row) : nil
            }
            let percent = TransferEventFormat.percent(of: event.row)
            if event.kind == .progress, let before = printedPercents[event.row.id], before / 20 == percent / 20 {
                return nil
            }
            printedPercents[event.row.id] = percent
            return TransferEventFormat.jobStateLine(for: event.row)
        }
    }

    private func requestFrame() {
        let now = Self.now()
        switch throttle.change(at: now) {
        case .drawNow:
            draw(at: now)
        case .drawAt(let time):
            DispatchQueue.main.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, time - now) * 1e9))) {
                [self] in draw(at: Self.now())
            }
        case .wait:
            return
        }
    }

    private func draw(at now: Double) {
        guard !isFinished else { return }
        throttle.drew(at: now)
        switch mode {
        case .live:
            screen.maxRows = max(1, min(12, (height() ?? 14) - 2))
            write(screen.frame(board, width: width(), messages: pendingMessages))
            pendingMessages = []
        case .json:
            let events = unsentProgress.values.sorted { $0.row.id < $1.row.id }
            unsentProgress = [:]
            for event in events { emitJSON(event) }
        case .lines, .quiet:
            return
        }
    }

    private func emitJSON(_ event: TransferBoard.Event) {
        if let line = TransferEventFormat.jsonLine(TransferEventFormat.JSONEvent(event)) { write(line + "\n") }
    }

    private static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}
