import Foundation
import JobKitNetworking

/// The file names `jobkit download` saves to, and the checks it makes on them before anything is fetched.
enum DownloadNaming {
    /// The longest file name (most file systems' limit, in bytes).
    static let maximumNameBytes = DownloadManager.maximumNameLength

    /// Why `name` cannot be a file name in the output folder, or nil when it can: the download manager's
    /// one name rule (`DownloadManager.checkName`): one path component, not `.` or `..`, without control
    /// characters, at most 255 bytes, not a name the manager keeps for itself (`.jobkit…`, `….part`).
    static func problem(with name: String) -> String? {
        do {
            try DownloadManager.checkName(name)
            return nil
        } catch {
            if case .invalidName(_, let reason) = error { return reason }
            return error.localizedDescription
        }
    }

    /// The name a URL saves to, as curl `-O` and aria2 choose it: its last path component, percent-decoded,
    /// with `/` and control characters replaced by `_`; `index.html` when the path has none. A name longer
    /// than 255 bytes is shortened, keeping its extension; one the manager keeps for itself is changed by
    /// a `_` (`x.part_`, `_.jobkit-downloads.journal`).
    static func name(for url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = last.removingPercentEncoding ?? last
        return sanitized(decoded) ?? "index.html"
    }

    /// The name a server suggests in `Content-Disposition` (`--content-disposition`), made safe by the same
    /// rule as a URL's: only its last path component, control characters (NUL too) and `/` replaced by `_`,
    /// shortened to 255 bytes keeping its extension, a `_` against the names the manager keeps; nil for a
    /// header without a name, or one that is empty, `.` or `..` (the URL's name is used then).
    static func name(fromContentDisposition value: String) -> String? {
        ContentDisposition.fileName(value).flatMap(sanitized)
    }

    /// `text` made a file name by the rule of `name(for:)`; nil when nothing usable is left.
    private static func sanitized(_ text: String) -> String? {
        var name = String(
            text.unicodeScalars.map {
                $0 == "/" || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "_" : Character($0)
            })
        if name.trimmingCharacters(in: .whitespaces).isEmpty || name == "." || name == ".." { return nil }
        if name.hasPrefix(".jobkit") { name = "_" + name }
        name = shortened(name, to: maximumNameBytes)
        return problem(with: name) == nil ? name : shortened(name, to: maximumNameBytes - 1) + "_"
    }

    /// `name` cut to at most `limit` bytes of UTF-8 on a character boundary, keeping its extension at the
    /// end: up to two dotted parts of 1 to 8 letters or digits each (`.iso`, `.tar.gz`).
    static func shortened(_ name: String, to limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var stem = Substring(name)
        var suffix = ""
        for _ in 0..<2 {
            guard let dot = stem.lastIndex(of: "."), dot != stem.startIndex else { break }
            let part = stem[stem.index(after: dot)...]
            guard (1...8).contains(part.count), part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                break
            }
            suffix = String(stem[dot...]) + suffix
            stem = stem[..<dot]
        }
        var kept = ""
        var used = suffix.utf8.count
        for character in stem {
            let size = String(character).utf8.count
            guard used + size <= limit else { break }
            kept.append(character)
            used += size
        }
        return kept + suffix
    }
}
