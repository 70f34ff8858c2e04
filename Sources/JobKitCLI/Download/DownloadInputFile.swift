import Foundation

/// aria2's input file, as `jobkit download -i FILE` reads it: a URL on a line of its own, then its options
/// on indented lines; `#` comments and blank lines anywhere.
///
/// ```
/// # the nightly images
/// https://example.com/images/disk.img
///   out=nightly.img
///   checksum=sha-256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// https://example.com/images/notes.txt
/// ```
///
/// Options: `out=NAME` (the file name in the output folder), `checksum=sha-256=HEX` and
/// `max-download-limit=SPEED` (aria2's: bytes a second, `K`/`M` suffixes, `0` for none). A line that is not
/// one of these is an error naming its line: an option before any URL, an unknown or repeated option, a
/// line without `=`, several URLs on one line (aria2's mirrors), a URL that is not `http` or `https`.
enum DownloadInputFile {
    /// The longest input file read: 64 MiB.
    static let maximumBytes = 64 << 20

    /// One URL and its options.
    struct Entry: Equatable, Sendable {
        var url: URL
        /// `out=`: the file name; nil to take it from the URL.
        var name: String?
        /// `checksum=`: the text after `checksum=`, as written (checked by the caller).
        var checksum: String?
        /// Where the URL was: its line in the file (or its position among the arguments), from 1.
        var line: Int
        /// `max-download-limit=`: bytes a second (`0`: no limit of its own); nil: not given.
        var maxBytesPerSecond: Int64? = nil
    }

    /// A line that cannot be read: `FILE:LINE: what is wrong`.
    struct ParseError: Error, LocalizedError, Equatable {
        var source: String
        var line: Int
        var message: String

        /// `FILE:LINE: reason`, or `FILE: reason` for the file as a whole (line 0).
        var errorDescription: String? { line == 0 ? "\(source): \(message)" : "\(source):\(line): \(message)" }
    }

    /// The entries of `text`, read from `source` (named in errors).
    static func parse(_ text: String, source: String) throws(ParseError) -> [Entry] {
        var entries: [Entry] = []
        var seenOptions: Set<String> = []
        // `\r\n` is one Character in Swift, so lines are split on every kind of newline, not on "\n".
        for (offset, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = offset + 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            func fail(_ message: String) -> ParseError { ParseError(source: source, line: number, message: message) }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if line.first == " " || line.first == "\t" {
                guard !entries.isEmpty else { throw fail("an option line before any URL") }
                guard let equals = trimmed.firstIndex(of: "=") else {
                    throw fail("expected an option as KEY=VALUE, got '\(shown(trimmed))'")
                }
                let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                let value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                guard seenOptions.insert(key).inserted else { throw fail("'\(shown(key))' given twice for one URL") }
                switch key {
                case "out":
                    if let problem = DownloadNaming.problem(with: value) {
                        throw fail("out=\(shown(value)): \(problem)")
                    }
                    entries[entries.count - 1].name = value
                case "checksum":
                    guard !value.isEmpty else { throw fail("checksum= needs a value, like sha-256=HEX") }
                    entries[entries.count - 1].checksum = value
                case "max-download-limit":
                    do {
                        // 0: none of its own, whatever --max-download-limit says.
                        entries[entries.count - 1].maxBytesPerSecond = try SpeedLimit.parse(value) ?? 0
                    } catch {
                        throw fail("max-download-limit=: \(error.message)")
                    }
                default:
                    throw fail("unknown option '\(shown(key))': jobkit reads out=, checksum= and max-download-limit=")
                }
                continue
            }
            guard !trimmed.contains(where: { $0 == " " || $0 == "\t" }) else {
                throw fail("one URL per line: several URLs (aria2's mirrors) are not supported")
            }
            guard let url = httpURL(trimmed) else { throw fail("not an http:// or https:// URL: '\(shown(trimmed))'") }
            entries.append(Entry(url: url, line: number))
            seenOptions = []
        }
        return entries
    }

    /// Reads and parses the file at `path` (`-` for standard input).
    static func read(_ path: String) throws(ParseError) -> [Entry] {
        let data: Data
        do {
            if path == "-" {
                data = FileHandle.standardInput.readData(ofLength: maximumBytes + 1)
            } else {
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                data = try handle.read(upToCount: maximumBytes + 1) ?? Data()
            }
        } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let reason = !exists ? "no such file" : isDirectory.boolValue ? "is a directory" : "cannot be read"
            throw ParseError(source: path, line: 0, message: reason)
        }
        guard data.count <= maximumBytes else {
            throw ParseError(source: path, line: 0, message: "larger than \(maximumBytes >> 20) MiB")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ParseError(source: path, line: 0, message: "not UTF-8 text")
        }
        return try parse(text, source: path == "-" ? "standard input" : path)
    }

    /// `text` as an `http` or `https` URL with a host, or nil.
    static func httpURL(_ text: some StringProtocol) -> URL? {
        guard let url = URL(string: String(text)), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else { return nil }
        return url
    }

    private static func shown(_ text: some StringProtocol) -> String {
        let clean = DisplayWidth.fit(text, to: .max)
        return clean.count > 80 ? clean.prefix(80) + "…" : clean
    }
}
