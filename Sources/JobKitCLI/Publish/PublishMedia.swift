import Foundation

/// The files `jobkit publish` uploads, and the names it stores them under on the server.
enum PublishMedia {
    /// The characters the server accepts in a media name.
    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    /// The server's longest media name.
    static let maximumNameLength = 128

    /// The server-side name of the `index`th file, called `fileName` here: `RUN-INDEX-NAME`, where every
    /// character the server refuses becomes `_` and a long name keeps its end (the extension).
    ///
    /// Unique per run and per file, so a retried `PUT` overwrites only its own upload, and two runs (or two
    /// files of the same name) never overwrite each other's.
    static func name(for fileName: String, index: Int, run: String) -> String {
        let cleaned = String(fileName.map { allowed.contains($0) ? $0 : "_" })
        let prefix = "\(run)-\(index + 1)-"
        let room = maximumNameLength - prefix.count
        let kept = cleaned.count > room ? String(cleaned.suffix(room)) : cleaned
        return prefix + (kept.isEmpty ? "media" : kept)
    }

    /// A fresh run id: eight lowercase hexadecimal digits.
    static func newRun() -> String {
        let value = UInt32.random(in: 0...UInt32.max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Why `path` cannot be uploaded (missing, a folder, unreadable), or nil when it can.
    static func problem(with path: String) -> String? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return "\(path): no such file"
        }
        if isDirectory.boolValue { return "\(path): is a directory, not a file" }
        guard FileManager.default.isReadableFile(atPath: path) else { return "\(path): permission denied" }
        return nil
    }

    /// The size of the file at `url` in bytes, or nil.
    static func size(of url: URL) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
    }
}
