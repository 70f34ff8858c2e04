import Testing

/// What a terminal shows after text is written to it: a minimal emulator of the escapes the live displays use
/// (cursor up, clear line, clear to the end of the screen, colors), which it checks are the only ones.
package struct TerminalEmulator {
    package private(set) var lines = [""]
    private var row = 0

    /// The screen's lines, without the empty last one.
    package var screen: [String] {
        var shown = lines
        while shown.last == "" { shown.removeLast() }
        return shown
    }

    package init() {}

    /// Moves through `text` as a terminal would.
    package mutating func write(_ text: String) {
        var rest = Substring(text)
        while let character = rest.first {
            if character == "\u{1B}" {
                let command = rest.dropFirst(2).prefix { !$0.isLetter }
                let letter = rest.dropFirst(2 + command.count).first
                rest = rest.dropFirst(3 + command.count)
                switch letter {
                case "A": row = max(0, row - (Int(command) ?? 1))
                case "K": lines[row] = ""
                case "J":
                    lines.removeSubrange((row + 1)...)
                    lines[row] = ""
                case "m": break  // a color: nothing to see in the text
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
    }
}
