import Foundation

/// The two non-terminal forms of the display's events: plain lines (for a pipe or a log file) and one JSON
/// object per event (`--json`, for scripts).
enum TransferEventFormat {
    /// Which plain lines a pipe gets.
    enum LineStyle: Equatable, Sendable {
        /// One line per status change of a transfer: `started a.bin (1.0 MiB)`, `completed a.bin (1.0 MiB)`.
        case transfers
        /// The articles' job states, the downloads demo's: `  download 3: pending`, `  download 3: running
        /// 40%` (progress every 20%, and 100%), `  download 3: 100% completed`.
        case jobStates
    }

    /// The plain line for `event`, or nil for a progress event or a row only queued (a pipe gets status
    /// changes only). Names and reasons lose their control characters; nothing else is cut.
    static func plainLine(for event: TransferBoard.Event) -> String? {
        guard event.kind == .status else { return nil }
        let row = event.row
        let name = DisplayWidth.fit(row.name, to: .max)
        switch row.status {
        case .queued: return nil
        case .running:
            return "started \(name)" + (row.totalBytes.map { " (\(TransferUnits.bytes($0)))" } ?? "")
        case .retrying(let attempt, let reason):
            return "retrying \(name) (attempt \(attempt)): \(DisplayWidth.fit(reason, to: .max))"
        case .paused: return "paused \(name)"
        case .completed: return "completed \(name) (\(TransferUnits.bytes(row.bytesDone)))"
        case .failed(let reason): return "failed \(name): \(DisplayWidth.fit(reason, to: .max))"
        case .cancelled: return "cancelled \(name)"
        }
    }

    /// The `.jobStates` line of `row` (every status has one; progress is the row's whole percent).
    static func jobStateLine(for row: TransferRow) -> String {
        let name = DisplayWidth.fit(row.name, to: .max)
        return switch row.status {
        case .queued: "  \(name): pending"
        case .running, .retrying, .paused: "  \(name): running \(percent(of: row))%"
        case .completed: "  \(name): 100% completed"
        case .failed(let reason) where reason.isEmpty: "  \(name): failed"
        case .failed(let reason): "  \(name): failed: \(DisplayWidth.fit(reason, to: .max))"
        case .cancelled: "  \(name): cancelled"
        }
    }

    /// The whole percent of `row` done, `0...100`; 0 while its size is unknown.
    static func percent(of row: TransferRow) -> Int {
        guard let total = row.totalBytes, total > 0 else { return 0 }
        return Int(min(max(Double(row.bytesDone) / Double(total), 0), 1) * 100)
    }

    /// One event of `--json`: `{"event":"completed","id":3,"name":"a.bin","bytes":1024,…}`.
    struct JSONEvent: Encodable, Equatable {
        var event: String
        var id: Int
        var name: String
        var bytes: Int64
        var total: Int64?
        /// Bytes per second, rounded.
        var speed: Int64
        /// Seconds left, rounded up; nil when unknown.
        var eta: Int64?
        var attempt: Int?
        var reason: String?

        init(_ event: TransferBoard.Event) {
            let row = event.row
            self.event = event.kind == .progress ? "progress" : row.status.word
            id = row.id
            name = row.name
            bytes = row.bytesDone
            total = row.totalBytes
            speed = Self.whole(row.bytesPerSecond, rounding: .toNearestOrAwayFromZero) ?? 0
            eta = row.secondsRemaining.flatMap { Self.whole($0, rounding: .up) }
            switch row.status {
            case .retrying(let attempt, let reason):
                self.attempt = attempt
                self.reason = reason
            case .failed(let reason): self.reason = reason
            default: break
            }
        }

        /// `value` as a whole number, nil when it is not finite; clamped to 0...Int64.max.
        static func whole(_ value: Double, rounding: FloatingPointRoundingRule) -> Int64? {
            guard value.isFinite else { return nil }
            let rounded = value.rounded(rounding)
            return rounded <= 0 ? 0 : rounded >= 9.2e18 ? .max : Int64(rounded)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event, forKey: .event)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(total, forKey: .total)  // null when unknown, present always
            try container.encode(speed, forKey: .speed)
            try container.encode(eta, forKey: .eta)
            try container.encodeIfPresent(attempt, forKey: .attempt)
            try container.encodeIfPresent(reason, forKey: .reason)
        }

        private enum CodingKeys: String, CodingKey {
            case event, id, name, bytes, total, speed, eta, attempt, reason
        }
    }

    /// `value` as one line of JSON (keys sorted, no newline inside), or nil if it cannot be encoded.
    static func jsonLine(_ value: some Encodable) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).flatMap { String(data: $0, encoding: .utf8) }
    }
}
