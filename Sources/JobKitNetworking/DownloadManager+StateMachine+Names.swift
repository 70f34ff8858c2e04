import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Names

    /// The file name a URL gives: its last path component, percent-decoded.
    static func defaultName(for url: URL) throws(DownloadManagerError) -> String {
        let name = url.lastPathComponent
        guard !name.isEmpty, name != "/" else {
            throw .invalidName("", reason: "\(url.absoluteString) has no file name in its path: give one")
        }
        return name
    }

    /// Refuses names that are not one plain file name of the directory, or that the manager keeps.
    static func validate(name: String) throws(DownloadManagerError) {
        func refuse(_ reason: String) -> DownloadManagerError { .invalidName(name, reason: reason) }
        guard !name.isEmpty else { throw refuse("it is empty") }
        guard name != ".", name != ".." else { throw refuse("it names a directory") }
        guard !name.contains("/") else { throw refuse("it has a '/': a name is one file in the directory") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw refuse("it has a control character")
        }
        // 255 bytes is the usual limit of a file name, and `NAME.part.meta.tmp` adds 14.
        guard name.utf8.count <= 241 else { throw refuse("it is longer than 241 bytes") }
        guard !name.hasPrefix(".jobkit-downloads") else { throw refuse("the manager keeps that name for its journal") }
        for suffix in [".part", ".part.meta", ".part.meta.tmp"] where name.hasSuffix(suffix) {
            throw refuse("names ending in '\(suffix)' are kept for partial downloads")
        }
    }

    /// `host:port` of a URL, lower-cased: what the per-host limit counts.
    static func host(of url: URL) -> String {
        let host = url.host?.lowercased() ?? ""
        return url.port.map { "\(host):\($0)" } ?? host
    }
}
