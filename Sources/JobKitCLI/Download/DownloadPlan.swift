import Foundation
import JobKitNetworking

/// The downloads of one run: each entry with its file name and checksum, checked before anything is fetched.
struct DownloadPlan: Equatable, Sendable {
    /// One file to fetch.
    struct Item: Equatable, Sendable {
        var url: URL
        var name: String
        var checksum: String?
        /// Headers sent with each of its requests (`header=`, `referer=`, `user-agent=`).
        var headers: [DownloadManager.Header] = []
        /// Its name comes from its URL (no `out=`): `--content-disposition` may take the server's instead.
        var namedByURL = true
        /// `max-download-limit=`: its own speed limit in bytes a second; nil: the command's.
        var maxBytesPerSecond: Int64? = nil
        /// `split=`: its connections; nil: the command's (`-x`).
        var connections: Int? = nil
        /// `dir=`: the folder under the output folder it goes to (`a/b`); nil: the output folder.
        var subfolder: String? = nil

        /// Where it goes under the output folder, for messages and to tell names apart: `a/b/name`.
        var path: String { subfolder.map { $0 + "/" + name } ?? name }
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
    /// - Throws: `Problem` for a URL that is not http(s), a checksum that cannot be read (naming its
    ///   `checksum=` line), or two downloads that would save to the same name.
    static func make(
        urls: [String], entries: [DownloadInputFile.Entry], source: String?,
        checksumProblem: (String) -> String?
    ) throws(Problem) -> DownloadPlan {
        var items: [Item] = []
        for (index, text) in urls.enumerated() {
            guard let url = DownloadInputFile.httpURL(text) else {
                throw Problem(message: "URL \(index + 1): not an http:// or https:// URL: '\(text.prefix(80))'")
            }
            items.append(Item(url: url, name: DownloadNaming.name(for: url), checksum: nil))
        }
        for entry in entries {
            if let checksum = entry.checksum, let problem = checksumProblem(checksum) {
                let line = entry.optionLines["checksum"] ?? entry.line
                throw Problem(message: "\(source ?? "input"):\(line): \(problem)")
            }
            items.append(
                Item(
                    url: entry.url, name: entry.name ?? DownloadNaming.name(for: entry.url), checksum: entry.checksum,
                    headers: entry.headers, namedByURL: entry.name == nil,
                    maxBytesPerSecond: entry.maxBytesPerSecond, connections: entry.connections,
                    subfolder: entry.subfolder))
        }
        // Where item `index` was given, for messages (not kept: a string an item): `URL 2` or `list.txt:7`.
        func origin(_ index: Int) -> String {
            index < urls.count ? "URL \(index + 1)" : "\(source ?? "input"):\(entries[index - urls.count].line)"
        }
        var firstByPath: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            if let first = firstByPath[item.path] {
                throw Problem(
                    message:
                        "\(origin(first)) and \(origin(index)) both save to '\(item.path)': give one of them out=NAME "
                        + "in an input file")
            }
            firstByPath[item.path] = index
        }
        return DownloadPlan(items: items)
    }

    /// The items by the folder they go to: the output folder's first (when any), then each subfolder in the
    /// order it first appears; each group's items in plan order.
    var bySubfolder: [(subfolder: String?, items: [Item])] {
        // One folder (the usual case): the plan's own array, not a copy.
        if let first = items.first, items.allSatisfy({ $0.subfolder == first.subfolder }) {
            return [(first.subfolder, items)]
        }
        var order: [String?] = items.contains { $0.subfolder == nil } ? [nil] : []
        var groups: [String?: [Item]] = [:]
        for item in items {
            if groups[item.subfolder] == nil, item.subfolder != nil { order.append(item.subfolder) }
            groups[item.subfolder, default: []].append(item)
        }
        return order.map { ($0, groups[$0] ?? []) }
    }

    /// The plan with the names servers suggest (`names[i]` for item `i`, nil: none) for the items named by
    /// their URL. A suggested name already taken by another item of the plan is not used: that item keeps its
    /// URL's name.
    func naming(_ names: [String?]) -> DownloadPlan {
        var plan = self
        var taken = Set(items.map(\.path))
        for (index, suggested) in names.enumerated() where index < items.count && items[index].namedByURL {
            guard let suggested, suggested != items[index].name else { continue }
            var renamed = items[index]
            renamed.name = suggested
            guard taken.insert(renamed.path).inserted else { continue }
            plan.items[index] = renamed
        }
        return plan
    }
}
