import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The download manager's journal buffer alone: the records waiting to be written, and compaction.
@Suite struct JournalBufferTests {
    typealias Record = DownloadJournal.Record

    func record(_ id: UInt64) -> Record { .state(id, .pending) }

    /// A compacted journal of `count` records (as many pending items, an `add` each).
    func compacted(_ count: Int) -> () -> (DownloadJournal.Header, DownloadJournal.Compacted) {
        {
            let url = URL(string: "https://a.example/f")!
            let entries = (0..<count).map {
                DownloadJournal.Entry(id: UInt64($0), url: url, name: "f\($0)", checksum: nil, status: .pending)
            }
            let compacted = DownloadJournal.compacted(entries, nextID: UInt64(count))
            return (compacted.header, compacted.records)
        }
    }

    func appended(_ write: JournalBuffer.Write?) -> [Record]? {
        if case .append(let records) = write { return records }
        return nil
    }

    func isRewrite(_ write: JournalBuffer.Write?) -> Bool {
        if case .rewrite = write { return true }
        return false
    }

    @Test func anEmptyBufferHasNothingToWrite() {
        var buffer = JournalBuffer()
        #expect(buffer.waitingCount == 0 && !buffer.isCompactionDue)
        #expect(buffer.take(compacted: compacted(0)) == nil)
    }

    @Test func oneRecordIsAppended() {
        var buffer = JournalBuffer()
        buffer.record(record(1))
        #expect(buffer.waitingCount == 1)
        #expect(appended(buffer.take(compacted: compacted(0))) == [record(1)])
        #expect(buffer.waitingCount == 0 && buffer.take(compacted: compacted(0)) == nil)
    }

    @Test func manyRecordsAreAppendedInOrder() {
        var buffer = JournalBuffer()
        for id in 1...1000 { buffer.record(record(UInt64(id))) }
        #expect(appended(buffer.take(compacted: compacted(0))) == (1...1000).map { record(UInt64($0)) })
    }

    @Test func aFailedAppendPutsItsRecordsBeforeLaterOnes() {
        var buffer = JournalBuffer()
        buffer.record(record(1))
        buffer.record(record(2))
        let failed = buffer.take(compacted: compacted(0))!
        buffer.record(record(3))
        buffer.untake(failed)
        #expect(appended(buffer.take(compacted: compacted(0))) == [record(1), record(2), record(3)])
    }

    @Test func aFailedRewriteIsOwedWholeEvenWithNothingNew() {
        var buffer = JournalBuffer()
        let failed = buffer.rewrite(compacted(3)())
        buffer.untake(failed)
        #expect(buffer.isCompactionDue)
        #expect(isRewrite(buffer.take(compacted: compacted(3))))
        #expect(!buffer.isCompactionDue && buffer.take(compacted: compacted(3)) == nil)
    }

    @Test func theJournalIsCompactedOnceAppendsOutnumberItsCompactedSize() {
        var buffer = JournalBuffer()
        for id in 1...1024 { buffer.record(record(UInt64(id))) }
        #expect(!buffer.isCompactionDue, "up to 1,024 appended records are appended")
        buffer.record(record(1025))
        #expect(buffer.isCompactionDue)
        #expect(isRewrite(buffer.take(compacted: compacted(5000))))
        // Now the compacted journal has 5,000 records: it is rewritten past 5,000 appended, not 1,024.
        for id in 1...5000 { buffer.record(record(UInt64(id))) }
        #expect(!buffer.isCompactionDue)
        buffer.noteWritten(1)
        buffer.record(record(0))
        #expect(buffer.isCompactionDue, "records the manager wrote itself count too")
    }

    /// A million records, on a thread of their own (`offThePool`) rather than the tests' shared pool.
    @Test func aMillionRecordsKeepTheJournalWithinTwiceItsCompactedSize() async {
        let live = 300
        let (largest, waiting, missed) = await offThePool { () -> (Int, Int, Int) in
            // The journal on disk: what was last rewritten, plus what was appended since.
            var buffer = JournalBuffer()
            var onDisk = 0
            var largest = 0
            var missed = 0
            for id in 1...scaledForTheRun(1_000_000) {
                buffer.record(record(UInt64(id % live)))
                guard id % 7 == 0 else { continue }
                switch buffer.take(compacted: compacted(live)) {
                case .append(let records): onDisk += records.count
                case .rewrite(_, let records): onDisk = records.count
                case nil: missed += 1
                }
                largest = max(largest, onDisk)
            }
            return (largest, buffer.waitingCount, missed)
        }
        #expect(missed == 0, "records were waiting")
        #expect(largest <= 2 * max(1024, live) + 7)
        #expect(waiting < 7)
    }
}
