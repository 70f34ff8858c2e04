import Foundation
import JobKitNetworking

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
/// Options: `out=NAME` (the file name in the output folder), `dir=PATH` (a folder under the output folder,
/// made when missing: a relative path without `..`; with `out=`, the file is `PATH/NAME`), `checksum=ALGORITHM=HEX` (md5, sha-1, sha-224,
/// sha-256, sha-384, sha-512), `max-download-limit=SPEED` (aria2's: bytes a second, `K`/`M` suffixes, `0` for
/// none), `split=N` (the file's connections, 1 to 16, as `-x`), `header=Name: value` (repeatable), `referer=URL` and `user-agent=TEXT`
/// (headers sent with every request of the file). A line that is not one of these is an error naming its
/// line: an option before any URL, an unknown or repeated option, a line without `=`, a header that cannot be
/// sent (a reserved name such as `Range`, a control character) or one too many (more than
/// `DownloadManager.Header.maximumCount` for one URL), several URLs on one line (aria2's mirrors), a URL that
/// is not `http` or `https`.
///
/// Each option is one entry of `options`, which says how it applies and whether it repeats: a new option is
/// one more entry there.
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
        /// `header=`, `referer=` and `user-agent=`, in the order given, validated.
        var headers: [DownloadManager.Header] = []
        /// Where the URL was: its line in the file (or its position among the arguments), from 1.
        var line: Int
        /// `max-download-limit=`: bytes a second (`0`: no limit of its own); nil: not given.
        var maxBytesPerSecond: Int64? = nil
        /// `split=`: its connections, 1 to 16; nil: not given.
        var connections: Int? = nil
        /// `dir=`: the folder under the output folder it goes to (`a/b`, normalized); nil: the output folder.
        var subfolder: String? = nil
        /// The line of each option given (the last, for a repeated one), by key: a problem found
        /// later in a value (a checksum that cannot be read) names the option's line.
        var optionLines: [String: Int] = [:]
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
                guard let option = options[key] else {
                    let known = options.keys.sorted().map { $0 + "=" }.joined(separator: ", ")
                    throw fail("unknown option '\(shown(key))': jobkit reads \(known)")
                }
                guard option.repeats || seenOptions.insert(key).inserted else {
                    throw fail("'\(shown(key))' given twice for one URL")
                }
                if let problem = option.apply(value, &entries[entries.count - 1]) { throw fail(problem) }
                entries[entries.count - 1].optionLines[key] = number
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

    /// One option of an input file: how it applies to its entry (nil, or what is wrong with the value), and
    /// whether it may be given more than once for one URL.
    struct Option: Sendable {
        var repeats = false
        var apply: @Sendable (_ value: String, _ entry: inout Entry) -> String?
    }

    /// The options jobkit reads, by key (lowercase).
    static let options: [String: Option] = [
        "out": Option { value, entry in
            if let problem = DownloadNaming.problem(with: value) { return "out=\(shown(value)): \(problem)" }
            entry.name = value
            return nil
        },
        "dir": Option { value, entry in
            switch subfolder(value) {
            case .success(let folder): entry.subfolder = folder
            case .failure(let problem): return "dir=\(shown(value)): \(problem.message)"
            }
            return nil
        },
        "checksum": Option { value, entry in
            guard !value.isEmpty else { return "checksum= needs a value, like sha-256=HEX" }
            entry.checksum = value
            return nil
        },
        "max-download-limit": Option { value, entry in
            switch Result(catching: { () throws(SpeedLimit.ParseError) in try SpeedLimit.parse(value) }) {
            case .success(let limit):
                // 0: none of its own, whatever --max-download-limit says.
                entry.maxBytesPerSecond = limit ?? 0
                return nil
            case .failure(let error):
                return "max-download-limit=: \(error.message)"
            }
        },
        "split": Option { value, entry in
            guard let count = Int(value), (1...16).contains(count) else {
                return "split=\(shown(value)): not a number of connections from 1 to 16"
            }
            entry.connections = count
            return nil
        },
        "header": Option(repeats: true) { value, entry in
            addHeader("header=", value, to: &entry) { () throws(DownloadManagerError) in
                try DownloadManager.Header(parsing: value)
            }
        },
        "referer": Option { value, entry in
            addHeader("referer=", value, to: &entry) { () throws(DownloadManagerError) in
                try DownloadManager.Header("Referer", value)
            }
        },
        "user-agent": Option { value, entry in
            addHeader("user-agent=", value, to: &entry) { () throws(DownloadManagerError) in
                try DownloadManager.Header("User-Agent", value)
            }
        },
    ]

    /// The subfolder `dir=value` names, as `a/b` (empty and `.` components dropped; nil for the output folder
    /// itself), or why it cannot be one: it must stay under the output folder — a relative path, without
    /// `..`, each folder name a file name by the manager's rule, at most 16 deep.
    static func subfolder(_ value: String) -> Result<String?, SubfolderProblem> {
        func refuse(_ message: String) -> Result<String?, SubfolderProblem> {
            .failure(SubfolderProblem(message: message))
        }
        guard !value.isEmpty else { return refuse("dir= needs a value, a folder under the output folder") }
        guard !value.hasPrefix("/") else {
            return refuse("an absolute path: dir= is a folder under -o, never outside it")
        }
        let components = value.split(separator: "/").map(String.init).filter { $0 != "." }
        if components.contains("..") {
            return refuse("'..' is not allowed: dir= is a folder under -o, never outside it")
        }
        guard components.count <= 16 else { return refuse("more than 16 folders deep") }
        for component in components {
            if let problem = DownloadNaming.problem(with: component) {
                return refuse("'\(shown(component))': \(problem)")
            }
        }
        return .success(components.isEmpty ? nil : components.joined(separator: "/"))
    }

    /// Why a `dir=` value cannot be used.
    struct SubfolderProblem: Error {
        var message: String
    }

    /// Adds the header `make` makes to `entry`: nil, or what is wrong (never the value: it may be a secret).
    private static func addHeader(
        _ option: String, _ value: String, to entry: inout Entry,
        _ make: () throws(DownloadManagerError) -> DownloadManager.Header
    ) -> String? {
        guard !value.isEmpty else { return "\(option) needs a value" }
        // The manager refuses more for a request: refused here, with the line, before anything is made.
        guard entry.headers.count < DownloadManager.Header.maximumCount else {
            return "\(option): more than \(DownloadManager.Header.maximumCount) headers for one URL "
                + "(header=, referer= and user-agent= together)"
        }
        do {
            entry.headers.append(try make())
            return nil
        } catch {
            return "\(option): \(error.localizedDescription)"
        }
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

    /// `text` as an `http` or `https` URL with a host, or nil. A URL that is one but cannot be
    /// fetched as written (a port beyond 65535) is returned: `DownloadURLCheck` fails its item
    /// alone when the download starts (`DownloadSession`), the other files still arrive.
    static func httpURL(_ text: some StringProtocol) -> URL? {
        guard let url = URL(string: String(text)), DownloadURLCheck.problem(with: url) != .unsupported else {
            return nil
        }
        return url
    }

    private static func shown(_ text: some StringProtocol) -> String {
        let clean = DisplayWidth.fit(text, to: .max)
        return clean.count > 80 ? clean.prefix(80) + "…" : clean
    }
}
