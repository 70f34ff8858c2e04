import Foundation
import JobKit

extension DownloadManagerStateMachine {
    // MARK: Names

    /// The file name a URL gives: its last path component, percent-decoded.
    static func defaultName(for url: URL) throws(DownloadManagerError) -> String {
        let name = url.lastPathComponent
        guard !name.isEmpty, name != "/" else {
            throw .invalidName("", reason: "\(url.redactedString) has no file name in its path: give one")
        }
        return name
    }

    /// `host:port` of a URL, lower-cased: what the per-host limit counts.
    static func host(of url: URL) -> String {
        let host = url.host?.lowercased() ?? ""
        return url.port.map { "\(host):\($0)" } ?? host
    }
}
