import Foundation

/// `Content-Range: bytes 100-199/1000` (or `bytes */1000` for a 416), read without trapping.
struct ContentRange: Equatable {
    /// The first and last byte of the body; nil for `bytes */total`.
    var range: ClosedRange<Int64>?
    /// The full length; nil for `*`.
    var total: Int64?

    init?(_ header: String?) {
        guard let header else { return nil }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes "), text.count < 200 else { return nil }
        let parts = text.dropFirst(6).trimmingCharacters(in: .whitespaces).split(
            separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[1] == "*" {
            total = nil
        } else {
            guard let total = Int64(parts[1]), (0...DownloadLimits.maximumLength).contains(total) else { return nil }
            self.total = total
        }
        if parts[0] == "*" {
            range = nil
        } else {
            let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0,
                first <= last, last < DownloadLimits.maximumLength
            else { return nil }
            range = first...last
        }
    }
}
