import Foundation

/// The file names `jobkit download` saves to, and the checks it makes on them before anything is fetched.
enum DownloadNaming {
    /// The longest file name (most file systems' limit, in bytes).
    static let maximumNameBytes = 255

    /// Why `name` cannot be a file name in the output folder, or nil when it can: it must be one path
    /// component, not `.` or `..`, without control characters, and not a name the download manager keeps
    /// for itself (a `.part`, `.part.meta` or its journal).
    static func problem(with name: String) -> String? {
        if name.isEmpty { return "a file name cannot be empty" }
        if name == "." || name == ".." { return "a file name cannot be '.' or '..'" }
        if name.contains("/") { return "a file name, not a path: no '/'" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "a file name cannot contain control characters"
        }
        if name.utf8.count > maximumNameBytes { return "a file name has at most \(maximumNameBytes) bytes" }
        if name.hasSuffix(".part") || name.hasSuffix(".part.meta") || name.hasPrefix(".jobkit") {
            return "the name is kept for partial downloads and the journal"
        }
        return nil
    }

    /// The name a URL saves to, as curl `-O` and aria2 choose it: its last path component, percent-decoded,
    /// with `/` and control characters replaced by `_`; `index.html` when the path has none.
    static func name(for url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = last.removingPercentEncoding ?? last
        var name = String(
            decoded.unicodeScalars.map { $0 == "/" || $0.value < 0x20 || $0.value == 0x7F ? "_" : Character($0) })
        while name.utf8.count > maximumNameBytes { name.removeFirst() }
        guard problem(with: name) == nil else {
            return name.isEmpty || name == "." || name == ".." ? "index.html" : name + "_"
        }
        return name
    }
}

/// The downloads of one run: each entry with its file name and checksum, checked before anything is fetched.
struct DownloadPlan: Equatable, Sendable {
    /// One file to fetch.
    struct Item: Equatable, Sendable {
        var url: URL
        var name: String
        var checksum: String?
        /// Where it was given, for messages: `URL 2` or `list.txt:7`.
        var origin: String
    }

    var items: [Item]

    /// A usage error found in the plan: its message names where (`URL 2`, `list.txt:7`).
    struct Problem: Error, LocalizedError, Equatable {
        var message: String
        var errorDescription: String? { message }
    }

    /// The plan of `urls` (from the command line) and `entries` (from the input file `source`).
    ///
    /// - Parameter checksumProblem: why a `checksum=` text cannot be used, or nil when it can.
    /// - Throws: `Problem` for a URL that is not http(s), a checksum that cannot be read, or two downloads
    ///   that would save to the same name.
    static func make(
        urls: [String], entries: [DownloadInputFile.Entry], source: String?,
        checksumProblem: (String) -> String?
    ) throws(Problem) -> DownloadPlan {
        var items: [Item] = []
        for (index, text) in urls.enumerated() {
            guard let url = DownloadInputFile.httpURL(text) else {
                throw Problem(message: "URL \(index + 1): not an http:// or https:// URL: '\(text.prefix(80))'")
            }
            items.append(Item(url: url, name: DownloadNaming.name(for: url), checksum: nil, origin: "URL \(index + 1)"))
        }
        for entry in entries {
            let origin = "\(source ?? "input"):\(entry.line)"
            if let checksum = entry.checksum, let problem = checksumProblem(checksum) {
                throw Problem(message: "\(origin): \(problem)")
            }
            items.append(
                Item(
                    url: entry.url, name: entry.name ?? DownloadNaming.name(for: entry.url), checksum: entry.checksum,
                    origin: origin))
        }
        var firstByName: [String: Item] = [:]
        for item in items {
            if let first = firstByName[item.name] {
                throw Problem(
                    message:
                        "\(first.origin) and \(item.origin) both save to '\(item.name)': give one of them out=NAME "
                        + "in an input file")
            }
            firstByName[item.name] = item
        }
        return DownloadPlan(items: items)
    }
}
