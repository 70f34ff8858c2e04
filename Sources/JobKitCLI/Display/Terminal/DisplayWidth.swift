/// How many terminal columns text takes, and how to cut it to a width, by grapheme cluster.
///
/// An approximation of `wcwidth` good for file names: East Asian wide and emoji clusters take two
/// columns, clusters made only of combining marks or format characters none, every other cluster one.
/// A cut never splits a cluster, so text never ends in half a character.
enum DisplayWidth {
    /// The columns `text` takes.
    static func of(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + columns(of: $1) }
    }

    /// The columns one character takes: 0, 1 or 2.
    static func columns(of character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if first.value < 0x20 || (0x7F..<0xA0).contains(first.value) { return 0 }  // controls are dropped
        if character.unicodeScalars.allSatisfy({ isZeroWidth($0) }) { return 0 }
        if character.unicodeScalars.contains(where: { isWide($0) }) { return 2 }
        return 1
    }

    /// `text` cut to at most `width` columns; when it is cut, its last column is `…`. Control characters
    /// (escapes, newlines, tabs) are removed first, so a name can never move the cursor.
    static func fit(_ text: some StringProtocol, to width: Int) -> String {
        guard width > 0 else { return "" }
        let clean = String(text.filter { columns(of: $0) > 0 || !isControl($0) })
        guard of(clean) > width else { return clean }
        var result = ""
        var used = 0
        for character in clean {
            let columns = columns(of: character)
            if used + columns > width - 1 { break }
            result.append(character)
            used += columns
        }
        return result + "…"
    }

    /// `text` cut or padded with spaces to exactly `width` columns.
    static func pad(_ text: some StringProtocol, to width: Int) -> String {
        let fitted = fit(text, to: width)
        return fitted + String(repeating: " ", count: max(0, width - of(fitted)))
    }

    private static func isControl(_ character: Character) -> Bool {
        character.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }
    }

    private static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: true
        default: scalar.value == 0x200B
        }
    }

    private static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let wideRanges: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
            0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD,
        ]
        return wideRanges.contains { $0.contains(scalar.value) }
            || (scalar.properties.isEmojiPresentation && scalar.value > 0xFF)
    }
}
