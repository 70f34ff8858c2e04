/// Every row of a display, in the order first seen, and what changed with each update.
///
/// A value type without I/O: the live frame, the plain lines and the JSON events are all computed from
/// it, and tests drive it with rows directly.
struct TransferBoard: Sendable {
    /// A change worth telling: a row's status changed, or (for JSON) its bytes moved.
    struct Event: Equatable, Sendable {
        enum Kind: Equatable, Sendable {
            /// The status changed (the row carries the new one).
            case status
            /// Only the bytes, speed or time left changed.
            case progress
        }

        var kind: Kind
        var row: TransferRow
    }

    private(set) var rows: [TransferRow] = []
    private var indexes: [Int: Int] = [:]

    /// The rows not yet final, in order.
    var activeRows: [TransferRow] { rows.filter { $0.status.isActive } }

    var totals: TransferTotals { TransferTotals(rows) }

    /// Records `row` (matched by id); returns what changed, or nil when nothing did.
    @discardableResult
    mutating func update(_ row: TransferRow) -> Event? {
        guard let index = indexes[row.id] else {
            indexes[row.id] = rows.count
            rows.append(row)
            return Event(kind: .status, row: row)
        }
        let previous = rows[index]
        rows[index] = row  // a final row may start again: a failed download queued again by a rerun
        if previous.status != row.status { return Event(kind: .status, row: row) }
        return previous == row ? nil : Event(kind: .progress, row: row)
    }

    /// The row with `id`, if any.
    func row(id: Int) -> TransferRow? {
        indexes[id].map { rows[$0] }
    }
}
