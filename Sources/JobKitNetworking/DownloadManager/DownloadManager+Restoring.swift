import Dispatch
import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension DownloadManager {
    // MARK: Restoring

    /// What a journal entry's status becomes, given what is on disk now.
    static func restoredStatus(_ entry: DownloadJournal.Entry, file: FileFacts, partExists: Bool)
        -> DownloadJournal.Entry.Status
    {
        switch entry.status {
        case .completed(let size):
            switch file {
            case .file(let found) where found == size: return .completed(size: size)
            case .missing, .directory: return .pending
            case .file(let found):
                return .failed(
                    ItemError(
                        kind: .fileInTheWay,
                        message:
                            "\(entry.name) has \(found) bytes, not the \(size) it had when downloaded: it changed, "
                            + "and is left as it is"))
            }
        case .finishing(let size):
            // Killed between the journal's `finishing` and `done`: the rename happened when the
            // file has the size and no `.part` is left.
            if case .file(let found) = file, found == size, !partExists { return .completed(size: size) }
            return .pending
        default:
            return entry.status
        }
    }
}
