import Foundation

extension DownloadJournal {
    /// Reads a journal a chunk at a time, as `parse` describes: memory holds the items the journal
    /// describes, one line and at most `maximumProblems` problems — never the file (a journal of
    /// 1 GiB is read in the memory of its items).
    struct Reader {
        /// A manager's lines hold a URL of at most 64 KiB (`DownloadURLCheck.maximumLength`), a name
        /// of at most 255 bytes and a reason of at most 8 KiB (`Record.maximumReasonLength`), each
        /// escaped at most six times over: a longer line (256 KiB) was not written by one, and is
        /// skipped to its end without being kept.
        static let maximumLineLength = 256 << 10
        /// The problems kept, one line each; the rest are counted in a last line.
        static let maximumProblems = 100
        /// The removed names remembered for `Contents.leftovers`: a journal a manager wrote is
        /// compacted before it holds many; a planted one cannot make the set grow without bound (the
        /// `.part`s of names past it stay, foreign files).
        static let maximumRemovedNames = 1 << 16

        private var line: [UInt8] = []
        /// The line being read is longer than `maximumLineLength`: dropped to its newline.
        private var overlong = false
        private var header: Header?
        /// Non-empty lines seen, the header included: the number of the line being read.
        private var lineNumber = 0
        private var table = Table()
        private var highest: UInt64 = 0
        private var ignoredLines = 0
        private var problems: [String] = []
        private var moreProblems = 0
        private let decoder = JSONDecoder()

        init() {}

        /// Reads the next bytes of the journal.
        /// - Throws: `.notAJournal`, `.unsupportedVersion` when its first line is not a header this
        ///   version reads.
        mutating func read(_ bytes: UnsafeRawBufferPointer) throws(ReadError) {
            guard let base = bytes.baseAddress else { return }
            var start = 0
            while start < bytes.count, let found = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
            {
                let newline = base.distance(to: UnsafeRawPointer(found))
                append(UnsafeRawBufferPointer(rebasing: bytes[start..<newline]))
                try endLine()
                start = newline + 1
            }
            append(UnsafeRawBufferPointer(rebasing: bytes[start...]))
        }

        /// What the journal says, once all of it was read. A last line without its newline (torn by a
        /// kill, or the whole of a header torn as the journal was made) counts like any other.
        mutating func finish() throws(ReadError) -> Contents {
            if header == nil, !overlong, !line.isEmpty, (try? decoder.decode(Header.self, from: Data(line))) == nil {
                // A header torn by a crash during creation, with nothing after it: no item was ever added.
                line = []
            }
            try endLine()
            var contents = Contents()
            contents.entries = table.entries.values.sorted { $0.id < $1.id }
            contents.leftovers = table.leftovers
            contents.nextID = max(header?.next ?? 1, highest + 1)
            contents.ignoredLines = ignoredLines
            contents.problems = problems
            if moreProblems > 0 { contents.problems.append("and \(moreProblems) more lines refused") }
            return contents
        }

        private mutating func append(_ bytes: UnsafeRawBufferPointer) {
            guard !overlong, !bytes.isEmpty else { return }
            if line.count + bytes.count > Self.maximumLineLength {
                overlong = true
                line = []
            } else {
                line.append(contentsOf: bytes)
            }
        }

        private mutating func endLine() throws(ReadError) {
            defer {
                line.removeAll(keepingCapacity: line.capacity <= 64 << 10)
                overlong = false
            }
            guard overlong || !line.isEmpty else { return }
            lineNumber += 1
            guard self.header != nil else {
                guard !overlong, let header = try? decoder.decode(Header.self, from: Data(line)) else {
                    throw .notAJournal
                }
                guard header.format == formatName else { throw .notAJournal }
                guard header.version == version else { throw .unsupportedVersion(header.version) }
                // Ids count up from 1: one near `UInt64.max` was not written by a manager, and
                // counting on from it would overflow.
                guard (header.next ?? 1) <= maximumID else { throw .notAJournal }
                self.header = header
                return
            }
            guard !overlong, let record = try? decoder.decode(Record.self, from: Data(line)), record.id < maximumID
            else {
                ignoredLines += 1
                return
            }
            switch table.apply(record) {
            case .applied:
                highest = max(highest, record.id)
            case .ignored:
                ignoredLines += 1
            case .refused(let reason):
                ignoredLines += 1
                if problems.count < Self.maximumProblems {
                    problems.append("line \(lineNumber): \(reason)")
                } else {
                    moreProblems += 1
                }
            }
        }
    }
}
