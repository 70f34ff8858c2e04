import JobKit

/// What the downloads scenario shows: one line per download, from its states.
///
/// On a terminal (`.live`), the downloads not yet completed keep one line each at the bottom of the
/// output, redrawn in place with their state and percent (100% included); a download that completes
/// leaves its live line and joins the completed list above, which only grows. Into a pipe or a file
/// (`.lines`), each change is one line of its own: pending, every 20% of progress (100% included),
/// then the final state.
///
/// A value type that only renders text, so that tests can feed it states and read the frames.
struct DownloadProgressView {
    enum Mode: Equatable {
        /// A terminal: redraw the live lines in place with ANSI escapes.
        case live
        /// A pipe or a file: one line per change, nothing ever redrawn.
        case lines
    }

    private enum Entry: Equatable {
        case pending
        case running(percent: Int)
        case completed
        case ended(String)

        var isFinal: Bool {
            switch self {
            case .completed, .ended: true
            case .pending, .running: false
            }
        }
    }

    let mode: Mode
    /// The downloads not completed yet, in the order they were first seen, with what they show.
    private var live: [(id: Int, entry: Entry)] = []
    /// The number of live lines on screen, which the next frame moves up over (`.live` only).
    private var drawnLiveLines = 0

    init(mode: Mode) {
        self.mode = mode
    }

    /// The text to write for `state` of download `id` (with its newlines), or "" when nothing changed.
    mutating func update(id: Int, state: JobState) -> String {
        let entry = Self.entry(for: state)
        let index = live.firstIndex { $0.id == id }
        let previous = index.map { live[$0].entry }
        guard previous != entry, isWorthALine(entry, after: previous) else { return "" }
        switch mode {
        case .lines:
            if let index { live[index].entry = entry } else { live.append((id, entry)) }
            if entry.isFinal { live.removeAll { $0.id == id } }
            return Self.line(id: id, entry: entry) + "\n"
        case .live:
            var frame = drawnLiveLines > 0 ? "\u{1B}[\(drawnLiveLines)A" : ""
            if let index { live[index].entry = entry } else { live.append((id, entry)) }
            if entry.isFinal {
                live.removeAll { $0.id == id }
                frame += "\u{1B}[2K" + Self.line(id: id, entry: entry) + "\n"  // joins the completed list
            }
            for (id, entry) in live { frame += "\u{1B}[2K" + Self.line(id: id, entry: entry) + "\n" }
            frame += "\u{1B}[J"  // clears what is left of the previous frame's live lines
            drawnLiveLines = live.count
            return frame
        }
    }

    /// In `.lines` mode, progress is one line per 20% (and 100%); on a terminal every percent redraws.
    private func isWorthALine(_ entry: Entry, after previous: Entry?) -> Bool {
        guard mode == .lines, case .running(let percent) = entry, case .running(let before)? = previous else {
            return true
        }
        return percent / 20 != before / 20
    }

    private static func entry(for state: JobState) -> Entry {
        switch state {
        case .pending: .pending
        case .running(let fraction): .running(percent: Int((min(max(fraction, 0), 1) * 100).rounded(.down)))
        case .finished: .completed
        case .failed, .cancelled: .ended("\(state)")
        }
    }

    private static func line(id: Int, entry: Entry) -> String {
        switch entry {
        case .pending: "  download \(id): pending"
        case .running(let percent): "  download \(id): running \(percent)%"
        case .completed: "  download \(id): 100% completed"
        case .ended(let text): "  download \(id): \(text)"
        }
    }
}
