/// The journal records waiting to be written, in order, and when the journal is due to be compacted.
///
/// It keeps these rules: records are handed out in the order they were recorded, and a write that
/// failed puts its records back in front of any later one (a failed rewrite is owed, whole); the
/// journal is rewritten from a compacted copy once the records appended since it was last written
/// whole outnumber that copy (and 1,024, `compactionThreshold`), so that it stays within about twice its compacted size at
/// an amortized constant cost per record. What waits is bounded by the records of the changes made
/// since the last write: every transition that records asks for a write.
///
/// A value behind the manager's lock, like the state machine that owns it.
struct JournalBuffer {
    /// What the journal must get: new records to append, or the whole journal to write anew.
    enum Write {
        case append([DownloadJournal.Record])
        case rewrite(DownloadJournal.Header, DownloadJournal.Compacted)
    }

    private var records: [DownloadJournal.Record] = []
    /// Records appended since the journal was last written whole, and how many that whole journal had.
    private var recordsSinceCompaction = 0
    private var compactedRecords = 0
    /// A rewrite of the journal failed: the next write is a whole one.
    private var compactionOwed = false

    /// The fewest records appended since the last whole write that make the next write a whole one.
    let compactionThreshold: Int

    /// Nothing waits; the journal counts as just compacted, empty. `compactionThreshold` is 1,024 but
    /// in tests (the simulation's schedules never reach it otherwise).
    init(compactionThreshold: Int = 1024) {
        self.compactionThreshold = max(1, compactionThreshold)
    }

    /// How many records wait to be written.
    var waitingCount: Int { records.count }

    /// Whether the next `take` rewrites the journal whole.
    var isCompactionDue: Bool {
        compactionOwed || (!records.isEmpty && recordsSinceCompaction > max(compactionThreshold, compactedRecords))
    }

    /// Queues a record to be written.
    mutating func record(_ record: DownloadJournal.Record) {
        records.append(record)
        recordsSinceCompaction += 1
    }

    /// Counts `count` records the manager wrote itself (the `add`s of a batch, written before it is
    /// committed): they grow the journal too.
    mutating func noteWritten(_ count: Int) {
        recordsSinceCompaction += count
    }

    /// Takes the records waiting to be written; nil when none wait. When compaction is due,
    /// `compacted` gives the whole journal to write instead.
    mutating func take(
        compacted: () -> (DownloadJournal.Header, DownloadJournal.Compacted)
    ) -> Write? {
        if isCompactionDue { return rewrite(compacted()) }
        guard !records.isEmpty else { return nil }
        defer { records = [] }
        return .append(records)
    }

    /// A write taken by `take` failed (a full disk): its records go back to the front, to be written
    /// before any later one (a failed rewrite is owed again, whole).
    mutating func untake(_ write: Write) {
        switch write {
        case .append(let taken): records = taken + records
        case .rewrite: compactionOwed = true
        }
    }

    /// The journal's file cannot be appended to (its end is torn): the next write is a whole one.
    mutating func oweRewrite() { compactionOwed = true }

    /// The whole journal is written as `journal` says (what is waiting is in it): counts start again.
    mutating func rewrite(_ journal: (DownloadJournal.Header, DownloadJournal.Compacted)) -> Write {
        records = []
        compactionOwed = false
        recordsSinceCompaction = 0
        compactedRecords = journal.1.count
        return .rewrite(journal.0, journal.1)
    }
}
