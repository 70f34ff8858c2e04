import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `DownloadManager`'s state machine between a run's `finishing` record and its end: the `.part`
/// may already have taken the name.
@Suite struct DownloadManagerFinalizingTests {
    typealias Machine = DownloadManagerStateMachine<Int>

    func machine() -> Machine {
        Machine(
            directory: URL(fileURLWithPath: "/downloads"), limit: 2, perHost: nil, interval: .milliseconds(100),
            window: .seconds(5))
    }

    func add(_ names: [String], to machine: inout Machine) throws -> (
        ids: [DownloadManager.ItemID], generations: [UInt64]
    ) {
        let prepared = try machine.prepare(names.map { .init(url: URL(string: "https://a.example/\($0)")!) })
        let (ids, actions) = machine.commit(prepared, now: 0)
        return (ids, actions.starts.map(\.generation))
    }

    @Test func aCompactionBetweenFinishingAndDoneKeepsTheFileDoneForTheNextManager() throws {
        var machine = machine()
        let (ids, generations) = try add(["a"], to: &machine)
        let finishing = machine.finishing(ids[0], generation: generations[0], size: 10)
        #expect(finishing)

        // The journal is compacted now, and the process is killed before `done`.
        guard case .rewrite(let header, let records) = machine.compacted() else {
            Issue.record("expected a rewrite")
            return
        }
        let contents = try DownloadJournal.parse(DownloadJournal.encode(header: header, records))

        #expect(contents.entries.map(\.status) == [.finishing(size: 10)])
        // The rename happened: the file is done, not fetched again.
        #expect(
            JournalRecovery.status(of: contents.entries[0], file: .file(size: 10), part: .missing)
                == .completed(size: 10))
        // It did not: the `.part` resumes, and the file under the name is still the manager's.
        #expect(JournalRecovery.status(of: contents.entries[0], file: .missing, part: .file(size: 10)) == .pending)
        #expect(contents.entries[0].ownsFile)
    }

    @Test func closingBetweenFinishingAndDoneKeepsTheFinishingRecord() throws {
        var machine = machine()
        let (ids, generations) = try add(["a"], to: &machine)
        let finishing = machine.finishing(ids[0], generation: generations[0], size: 10)
        #expect(finishing)
        _ = machine.close(now: 1)

        #expect(machine.journalEntries.map(\.status) == [.finishing(size: 10)])
    }
}
