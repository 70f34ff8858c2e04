extension String {
    /// The text with every control character (C0, DEL, C1) written as an escape (`\n`, `\t`,
    /// `\u{1B}`): safe to print on a terminal, where a server's or a journal's text could
    /// otherwise move the cursor, clear the screen or forge a line.
    package var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.isControlCharacter) else { return self }
        var escaped = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.isControlCharacter:
                escaped += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}

extension Unicode.Scalar {
    /// C0 controls, DEL and C1 controls.
    fileprivate var isControlCharacter: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value)
    }
}
