/// The lines of the live display, as pure functions of the rows and the terminal's width.
///
/// One line per active row — name, bar, percent, bytes, speed, time left — then a total line. Every
/// line fits in `width - 1` columns (the last column is left free: writing into it makes some terminals
/// wrap, which would break the redraw). When the width is short, the bar goes first, then the bytes,
/// the speed and the time left, and what is left is cut with `…`; any width, even 0, gives lines.
enum LiveFrame {
    /// The longest bar, in cells between its brackets.
    static let maximumBarCells = 30

    /// The live lines: at most `maxRows` rows (then `… N more`) and the total line.
    static func lines(for board: TransferBoard, width: Int, maxRows: Int) -> [String] {
        let width = max(1, width - 1)
        let active = board.activeRows
        let shown = active.count > max(1, maxRows) ? Array(active.prefix(max(1, maxRows) - 1)) : active
        let nameColumn = min(28, (shown.map { DisplayWidth.of($0.name) } + [5]).max() ?? 5)
        var lines = shown.map { line(for: $0, width: width, nameColumn: nameColumn) }
        if shown.count < active.count {
            lines.append(DisplayWidth.fit("  … \(active.count - shown.count) more", to: width))
        }
        lines.append(totalLine(board.totals, width: width, nameColumn: nameColumn))
        return lines
    }

    /// The line of one active row.
    static func line(for row: TransferRow, width: Int, nameColumn: Int? = nil) -> String {
        var fields: [Field] = []
        switch row.status {
        case .retrying(let attempt, let reason):
            fields.append(Field("retry \(attempt): \(reason)", priority: 5))
        case .paused:
            fields.append(Field("paused", priority: 5))
        default:
            break
        }
        fields += transferFields(
            done: row.bytesDone, total: row.totalBytes, speed: row.status == .running ? row.bytesPerSecond : 0,
            remaining: row.status == .running ? row.secondsRemaining : nil)
        return layout(
            name: row.name, nameColumn: nameColumn, fraction: fraction(row.bytesDone, row.totalBytes), fields: fields,
            width: width)
    }

    /// The total line: `total [====>   ] 42%  12.0 MiB/30.0 MiB  5.1 MiB/s  0:03  3/10 done, 1 failed`.
    static func totalLine(_ totals: TransferTotals, width: Int, nameColumn: Int? = nil) -> String {
        var counts = "\(totals.completed)/\(totals.count) done"
        if totals.failed > 0 { counts += ", \(totals.failed) failed" }
        if totals.cancelled > 0 { counts += ", \(totals.cancelled) cancelled" }
        let fields =
            transferFields(
                done: totals.bytesDone, total: totals.totalBytes, speed: totals.bytesPerSecond,
                remaining: totals.secondsRemaining) + [Field(counts, priority: 4)]
        return layout(
            name: "total", nameColumn: nameColumn, fraction: fraction(totals.bytesDone, totals.totalBytes),
            fields: fields, width: width)
    }

    /// A text after the bar; when the line is too short, the lowest priority goes first.
    struct Field {
        var text: String
        var priority: Int

        init(_ text: String, priority: Int) {
            self.text = text
            self.priority = priority
        }
    }

    private static func transferFields(done: Int64, total: Int64?, speed: Double, remaining: Double?) -> [Field] {
        let percent = TransferUnits.percent(done, of: total).map { "\($0)%" } ?? "--%"
        let bytes =
            total.map { "\(TransferUnits.bytes(done))/\(TransferUnits.bytes($0))" } ?? TransferUnits.bytes(done)
        return [
            Field(String(repeating: " ", count: max(0, 4 - percent.count)) + percent, priority: 6),
            Field(bytes, priority: 1),
            Field(TransferUnits.speed(speed), priority: 3),
            Field(TransferUnits.duration(remaining), priority: 2),
        ]
    }

    private static func fraction(_ done: Int64, _ total: Int64?) -> Double? {
        TransferUnits.percent(done, of: total).map { _ in
            guard let total, total > 0 else { return 1 }
            return Double(max(0, min(done, total))) / Double(total)
        }
    }

    /// `name  [bar] fields…`, fitted to `width`; the name is padded to `nameColumn` (its own width if nil), so
    /// that the bars of a frame line up.
    private static func layout(name: String, nameColumn: Int?, fraction: Double?, fields: [Field], width: Int)
        -> String
    {
        var fields = fields
        var info: String { fields.map(\.text).joined(separator: "  ") }
        let minimumName = min(8, max(1, DisplayWidth.of(name)))
        // Drop the least important fields until the name keeps a few columns.
        while fields.count > 1, minimumName + 1 + DisplayWidth.of(info) > width,
            let lowest = fields.indices.min(by: { fields[$0].priority < fields[$1].priority })
        {
            fields.remove(at: lowest)
        }
        let infoWidth = DisplayWidth.of(info)
        let room = width - infoWidth - 1
        guard room >= 1 else { return DisplayWidth.fit(name + " " + info, to: width) }
        let nameWidth = min(room, max(minimumName, nameColumn ?? min(DisplayWidth.of(name), 28)))
        let barRoom = room - nameWidth - 2
        var line = DisplayWidth.pad(name, to: nameWidth)
        if barRoom >= 12 { line += "  " + bar(fraction, cells: min(barRoom - 2, maximumBarCells)) }
        return DisplayWidth.fit(line + " " + info, to: width)
    }

    /// `[=====>    ]`, `[==========]` when done, blank when the fraction is unknown.
    static func bar(_ fraction: Double?, cells: Int) -> String {
        let cells = max(0, cells)
        guard let fraction, fraction.isFinite else { return "[" + String(repeating: " ", count: cells) + "]" }
        let filled = Int((min(max(fraction, 0), 1) * Double(cells)).rounded(.down))
        if filled >= cells { return "[" + String(repeating: "=", count: cells) + "]" }
        let head = filled > 0 ? ">" : ""
        let body = String(repeating: "=", count: max(0, filled - 1)) + head
        return "[" + body + String(repeating: " ", count: cells - body.count) + "]"
    }
}
