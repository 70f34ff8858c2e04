import Foundation

extension DownloadJournal {
    /// The records of a compacted journal, made from its entries one at a time as they are read: a
    /// journal of 100,000 items is rewritten without an array of its records (about 350 bytes an item).
    struct Compacted: Sequence {
        let entries: [Entry]
        /// Removed items whose `.part`s may be left: each is added and removed, before `entries`.
        let removed: [Entry]
        /// How many records it has.
        let count: Int

        init(_ entries: [Entry], removed: [Entry] = []) {
            self.entries = entries
            self.removed = removed
            count = entries.reduce(2 * removed.count) { $0 + Self.recordCount(of: $1) }
        }

        /// `records(of: entry).count`, without making them.
        static func recordCount(of entry: Entry) -> Int {
            switch entry.status {
            case .finishing where entry.replaced != nil: 3
            case .completed, .finishing: 2
            default: entry.ownsFile ? 3 : entry.status == .pending ? 1 : 2
            }
        }

        func makeIterator() -> some IteratorProtocol<Record> {
            var removed = removed.lazy.flatMap(Self.records(ofRemoved:)).makeIterator()
            var kept = entries.lazy.flatMap(Self.records(of:)).makeIterator()
            return AnyIterator { removed.next() ?? kept.next() }
        }

        /// The records that say `entry` was removed (its `.part` nobody's).
        static func records(ofRemoved entry: Entry) -> [Record] {
            [.add(entry.id, url: entry.url, name: entry.name, checksum: nil), Record(op: .remove, id: entry.id)]
        }

        /// The records that say everything `entry` says.
        static func records(of entry: Entry) -> [Record] {
            let add = Record.add(entry.id, url: entry.url, name: entry.name, checksum: entry.checksum)
            switch entry.status {
            case .completed(let size): return [add, Record(op: .done, id: entry.id, size: size)]
            case .finishing(let size):
                // Replacing a completed file (`downloadAgain`): that file's record, then this one's.
                if let replaced = entry.replaced {
                    return [
                        .add(entry.id, url: replaced.url, name: entry.name, checksum: entry.checksum),
                        Record(op: .done, id: entry.id, size: replaced.size),
                        Record(op: .finishing, id: entry.id, url: entry.url.absoluteString, size: size),
                    ]
                }
                return [add, Record(op: .finishing, id: entry.id, size: size)]
            default:
                // Keeps the ownership of the file under the name; the state record after it replaces
                // its status.
                if entry.ownsFile {
                    return [add, Record(op: .finishing, id: entry.id, size: 0), .state(entry.id, entry.status)]
                }
                return entry.status == .pending ? [add] : [add, .state(entry.id, entry.status)]
            }
        }
    }

    /// `encode(header:_:)` in chunks of at most `recordsPerChunk` records (the header with the first),
    /// each made when the sequence reaches it: a journal or a batch of many items is written without
    /// its whole text — nor, when `records` is lazy, its records — in memory at once.
    static func encodedChunks(header: Header? = nil, _ records: some Sequence<Record>, recordsPerChunk: Int = 1024)
        -> some Sequence<Data>
    {
        var header = header
        var records = records.makeIterator()
        var ended = false
        return AnySequence {
            AnyIterator { () -> Data? in
                guard !ended else { return nil }
                var chunk: [Record] = []
                while chunk.count < recordsPerChunk, let record = records.next() { chunk.append(record) }
                ended = chunk.count < recordsPerChunk
                guard !chunk.isEmpty || header != nil else { return nil }
                defer { header = nil }
                return encode(header: header, chunk)
            }
        }
    }
}
