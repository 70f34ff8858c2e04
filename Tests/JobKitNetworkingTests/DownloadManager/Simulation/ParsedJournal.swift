import Foundation

@testable import JobKitNetworking

/// The simulation's reading of a journal, as a new manager's would be (`DownloadJournal.Reader`),
/// kept between steps: a journal that only grew since the last reading is read from where that one
/// stopped, and one that did not change is not read again. Every step's checks, and the manager's
/// hooks before an unlink or a rename, read the journal; most steps append a line or nothing.
struct ParsedJournal {
    /// The bytes read so far, and the reader just past them (before `finish`).
    private var read = Data()
    private var reader = DownloadJournal.Reader()
    /// What the last bytes asked for read to (nil when they do not read).
    private var last: (journal: Data, contents: DownloadJournal.Contents?)?

    /// What `journal` says, or nil when it does not read (not a journal, or of another version).
    mutating func contents(of journal: Data) -> DownloadJournal.Contents? {
        if let last, last.journal == journal { return last.contents }
        if !(journal.count >= read.count && journal.prefix(read.count) == read) {
            read = Data()
            reader = DownloadJournal.Reader()
        }
        var contents: DownloadJournal.Contents?
        do throws(DownloadJournal.ReadError) {
            let more = journal.dropFirst(read.count)
            var failure: DownloadJournal.ReadError?
            more.withUnsafeBytes { bytes in
                do throws(DownloadJournal.ReadError) { try reader.read(bytes) } catch { failure = error }
            }
            if let failure { throw failure }
            read = journal
            var finishing = reader
            contents = try finishing.finish()
        } catch {
            read = Data()
            reader = DownloadJournal.Reader()
        }
        last = (journal, contents)
        return contents
    }
}
