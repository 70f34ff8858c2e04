/// Turns frames into what a terminal is sent: the live lines redrawn in place with ANSI escapes, and each
/// row that ends printed once above them, where it stays.
///
/// A value type without I/O: each call returns the text to write. The escapes used are cursor up
/// (`ESC[nA`), clear line (`ESC[2K`) and clear to the end of the screen (`ESC[J`), plus green and red for
/// the ✓ and ✗ marks.
struct LiveScreen: Sendable {
    /// The rows a frame shows at most, besides the total line.
    var maxRows = 12
    /// The number of live lines on screen, which the next frame moves up over.
    private var drawnLines = 0
    /// Rows already printed as ended.
    private var announced: Set<Int> = []

    /// The text that draws `board` over the previous frame; `messages` are printed above it, to stay.
    mutating func frame(_ board: TransferBoard, width: Int, messages: [String] = []) -> String {
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        for message in messages { text += "\u{1B}[2K" + message + "\n" }
        for row in board.rows where row.status.isFinal != announced.contains(row.id) {
            guard row.status.isFinal else {
                announced.remove(row.id)  // it started again: its next end is printed too
                continue
            }
            announced.insert(row.id)
            text += "\u{1B}[2K" + Self.endedLine(row, width: width, color: true) + "\n"
        }
        let lines = LiveFrame.lines(for: board, width: width, maxRows: maxRows)
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        drawnLines = lines.count
        return text + "\u{1B}[J"
    }

    /// The permanent line of a row that ended: `✓ name  1.0 MiB`, `✗ name: reason`, `- name: cancelled`.
    ///
    /// Only the name is cut to the width (a reason is never cut: it is why the command failed).
    static func endedLine(_ row: TransferRow, width: Int, color: Bool) -> String {
        let name = DisplayWidth.fit(row.name, to: max(8, width / 2))
        func paint(_ mark: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(mark)\u{1B}[0m" : mark }
        switch row.status {
        case .completed: return "\(paint("✓", "32")) \(name)  \(TransferUnits.bytes(row.bytesDone))"
        case .failed(let reason): return "\(paint("✗", "31")) \(name): \(DisplayWidth.fit(reason, to: .max))"
        case .cancelled: return "- \(name): cancelled"
        default: return "  \(name)"
        }
    }
}
