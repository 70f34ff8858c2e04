import Foundation

/// The journal of a `DownloadManager`: `.jobkit-downloads.journal` in its directory, JSON lines.
///
/// Format, version 1 (each line one JSON object, keys in any order, unknown keys ignored):
///
///     {"format":"jobkit-downloads","version":1,"next":N}        the first line; N: the next id
///     {"op":"add","id":1,"url":"https://…","name":"a.bin","checksum":"sha-256=…"}
///     {"op":"state","id":1,"state":"suspended"}                  pending | suspended | cancelled
///     {"op":"state","id":1,"state":"failed","kind":"http-status","reason":"HTTP 404 …","status":404}
///     {"op":"finishing","id":1,"size":1048576}                   the .part is about to take the name
///     {"op":"done","id":1,"size":1048576}                        the file is complete under its name
///     (`finishing` and `done` may carry the "url" the file came from: a completed item downloaded again)
///     {"op":"url","id":1,"url":"https://…"}                      the item's new URL (replaceURL, a refresh)
///     {"op":"remove","id":1}
///
/// A compacted journal keeps a removed item (its `add`, then its `remove`) while its `.part`s may
/// still be on disk: the next manager unlinks them. A completed item downloaded again
/// (`downloadAgain`) gets no record until its new file is about to take the name: its `finishing`,
/// with the new URL (and, should that fail, `done` with the old file's size and URL); a completed
/// item's `.part` is a leftover.
///
/// Records only ever append, one `write` each: a killed process loses none it wrote. With `.system`
/// durability `add` and `finishing` are synced to disk (adds before `add` returns, `finishing`
/// before the file is renamed) and `done` grouped in the background; the rest ride along. A line
/// that does not decode (the torn last line of a process killed mid-write) is ignored. A first line
/// that is not a header, or a header of another format or a newer version, makes the journal
/// unreadable: it is left as it is. Opening rewrites the journal from what it says (compaction,
/// also done once more records were appended than it had then, and at least 1,024): to a temporary
/// file, renamed over it (with `.system`, the file synced before and the folder after).
enum DownloadJournal {
    static let fileName = ".jobkit-downloads.journal"
    static let formatName = "jobkit-downloads"
    static let version = 1

    struct Header: Codable, Equatable {
        var format: String
        var version: Int
        var next: UInt64?
    }

    /// A journal, read.
    struct Contents: Equatable {
        var entries: [Entry] = []
        /// The next id to hand out.
        var nextID: UInt64 = 1
        /// Lines that did not decode, or made no sense, and were skipped.
        var ignoredLines = 0
        /// Records that decoded but were refused as input (a name that leaves the directory, a URL
        /// that is not http(s), a negative size), one line each: `line 2: …`.
        var problems: [String] = []
        /// The names of items that were removed or cancelled: their `.part`s are left over if the
        /// process stopped before removing them.
        var leftovers: Set<String> = []
    }

    /// The largest item id a journal may hold (2⁶²): far beyond any real queue, far from overflow.
    static let maximumID: UInt64 = 1 << 62

    /// Reads a journal's bytes. An empty file (or one whose only line is torn) is an empty journal.
    ///
    /// The journal is input, not truth: a record passes the checks `add` makes (the name rule of
    /// `DownloadManager.checkName`, an `http` or `https` URL with a host, a checksum that parses,
    /// ids below `maximumID`, sizes from 0 to `DownloadLimits.maximumLength`, no second item of a name);
    /// a record that fails them is dropped, with a line in `problems`.
    static func parse(_ data: Data) throws(ReadError) -> Contents {
        var reader = Reader()
        var failure: ReadError?
        data.withUnsafeBytes { bytes in
            do throws(ReadError) { try reader.read(bytes) } catch { failure = error }
        }
        if let failure { throw failure }
        return try reader.finish()
    }

    /// The items as the records so far describe them.
    struct Table {
        var entries: [UInt64: Entry] = [:]
        var names: [String: UInt64] = [:]
        /// Names of removed items.
        var removed: Set<String> = []

        /// Names whose `.part`s nobody resumes: removed items' (unless an item has the name again)
        /// and cancelled ones'.
        var leftovers: Set<String> {
            var names = removed.subtracting(self.names.keys)
            for entry in entries.values where entry.status == .cancelled { names.insert(entry.name) }
            return names
        }

        enum Outcome: Equatable {
            case applied
            /// Makes no sense (an unknown id, a missing field): a record of a dropped item, say.
            case ignored
            /// Decoded, but refused as input; the reason names the value.
            case refused(String)
        }

        /// Applies `record`; a removed name is remembered for `leftovers` while fewer than
        /// `Reader.maximumRemovedNames` are.
        mutating func apply(_ record: Record) -> Outcome {
            switch record.op {
            case .add: return add(record)
            case .state:
                guard var entry = entries[record.id] else { return .ignored }
                switch record.state {
                case "pending": entry.status = .pending
                case "suspended": entry.status = .suspended
                case "cancelled": entry.status = .cancelled
                case "failed":
                    let kind = record.kind.flatMap(DownloadManager.ItemError.Kind.init(rawValue:)) ?? .other
                    let status = record.status.flatMap { (100...999).contains($0) ? $0 : nil }
                    let reason = String((record.reason ?? "failed").prefix(2_000))
                    entry.status = .failed(DownloadManager.ItemError(kind: kind, message: reason, status: status))
                default: return .refused("unknown state '\(shown(record.state ?? ""))' of item \(record.id)")
                }
                entry.replaced = nil
                entries[record.id] = entry
                return .applied
            case .finishing, .done:
                guard var entry = entries[record.id], let size = record.size else { return .ignored }
                guard (0...DownloadLimits.maximumLength).contains(size) else {
                    return .refused("size \(size) of item \(record.id) is out of range")
                }
                // The URL of the file under the name, when it changed with it (`downloadAgain`): a
                // `finishing` replaces the completed file, which stays until the rename.
                entry.replaced = nil
                if let text = record.url {
                    guard let url = Self.downloadableURL(text) else {
                        return .refused("the URL of item \(record.id)'s file is not http(s): '\(shown(text))'")
                    }
                    if record.op == .finishing, case .completed(let size) = entry.status {
                        entry.replaced = Entry.Replaced(url: entry.url, size: size)
                    }
                    entry.url = url
                }
                entry.status = record.op == .done ? .completed(size: size) : .finishing(size: size)
                entry.ownsFile = true
                entries[record.id] = entry
                return .applied
            case .url:
                guard var entry = entries[record.id], let text = record.url else { return .ignored }
                guard let url = Self.downloadableURL(text) else {
                    return .refused(
                        "the new URL of item \(record.id) is not http(s): '\(shown(text))'; it keeps its URL")
                }
                entry.url = url
                entries[record.id] = entry
                return .applied
            case .remove:
                guard let entry = entries.removeValue(forKey: record.id) else { return .ignored }
                names[entry.name] = nil
                if removed.count < Reader.maximumRemovedNames { removed.insert(entry.name) }
                return .applied
            }
        }

        private mutating func add(_ record: Record) -> Outcome {
            guard let text = record.url, let name = record.name else { return .ignored }
            guard entries[record.id] == nil else { return .refused("item \(record.id) is added twice") }
            guard let url = Self.downloadableURL(text) else {
                return .refused("item \(record.id) has no http(s) URL: '\(shown(text))'")
            }
            do {
                try DownloadManager.checkName(name)
            } catch {
                return .refused("item \(record.id) was dropped: \(error.localizedDescription)")
            }
            if let holder = names[name] {
                return .refused("item \(record.id) has the name '\(shown(name))' of item \(holder)")
            }
            var checksum: Checksum?
            if let text = record.checksum {
                guard let parsed = try? Checksum(parsing: text) else {
                    return .refused("item \(record.id) has an unreadable checksum")
                }
                checksum = parsed
            }
            entries[record.id] = Entry(id: record.id, url: url, name: name, checksum: checksum, status: .pending)
            names[name] = record.id
            return .applied
        }

        /// `text` as a downloadable URL (`DownloadURLCheck`, the check `add` makes), or nil.
        private static func downloadableURL(_ text: String) -> URL? {
            guard let url = URL(string: text), DownloadURLCheck.problem(with: url) == nil else { return nil }
            return url
        }

        /// At most 200 characters of `text`, control characters escaped: for a message.
        private func shown(_ text: String) -> String {
            String(text.prefix(200)).escapingControlCharacters
        }
    }

    /// The records that say everything `entries` say, after a header: a compacted journal. The
    /// `removed` items whose `.part`s may still be on disk come first, each added and removed again: a
    /// process that dies before it unlinks them leaves the next one their names to clean.
    static func compacted(_ entries: [Entry], removed: [Entry] = [], nextID: UInt64)
        -> (header: Header, records: Compacted)
    {
        (Header(format: formatName, version: version, next: nextID), Compacted(entries, removed: removed))
    }

    /// `header` (if any) and `records` as JSON lines, keys sorted (what `JSONEncoder` with
    /// `.sortedKeys` and `.withoutEscapingSlashes` writes, without its cost on every completion).
    static func encode(header: Header? = nil, _ records: some Sequence<Record>) -> Data {
        var text = ""
        if let header {
            text += "{\"format\":\(quoted(header.format))"
            if let next = header.next { text += ",\"next\":\(next)" }
            text += ",\"version\":\(header.version)}\n"
        }
        for record in records {
            var fields: [String] = []
            if let checksum = record.checksum { fields.append("\"checksum\":\(quoted(checksum))") }
            fields.append("\"id\":\(record.id)")
            if let kind = record.kind { fields.append("\"kind\":\(quoted(kind))") }
            if let name = record.name { fields.append("\"name\":\(quoted(name))") }
            fields.append("\"op\":\(quoted(record.op.rawValue))")
            if let reason = record.reason { fields.append("\"reason\":\(quoted(reason))") }
            if let size = record.size { fields.append("\"size\":\(size)") }
            if let state = record.state { fields.append("\"state\":\(quoted(state))") }
            if let status = record.status { fields.append("\"status\":\(status)") }
            if let url = record.url { fields.append("\"url\":\(quoted(url))") }
            text += "{" + fields.joined(separator: ",") + "}\n"
        }
        return Data(text.utf8)
    }

    /// `text` as a JSON string.
    static func quoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
