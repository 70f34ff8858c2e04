import Dispatch
import Foundation

/// How a command shows its transfers.
enum DisplayMode: Equatable, Sendable {
    /// A terminal: live lines redrawn in place, at most 10 times a second.
    case live
    /// A pipe or a file (or `NO_COLOR`, or `TERM=dumb`): one plain line per status change, no escapes.
    case lines
    /// `--json`: one JSON object per event, on standard output.
    case json
    /// `--quiet`: nothing but what the command prints at the end.
    case quiet

    /// The mode for these options and this standard output. `NO_COLOR` (set, not empty) and `TERM=dumb` mean
    /// no escape codes at all, so plain lines.
    static func choose(json: Bool, quiet: Bool, isTerminal: Bool, environment: [String: String]) -> DisplayMode {
        if json { return .json }
        if quiet { return .quiet }
        let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        guard isTerminal, !noColor, environment["TERM"] != "dumb" else { return .lines }
        return .live
    }
}
