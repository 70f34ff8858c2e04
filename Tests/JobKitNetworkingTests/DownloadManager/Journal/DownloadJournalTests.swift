import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The journal's format, alone, and the file that holds the directory's lock.
@Suite struct DownloadJournalTests {
    typealias Entry = DownloadJournal.Entry

    static let entries: [Entry] = [
        Entry(
            id: 1, url: URL(string: "https://a.example/done.bin")!, name: "done.bin",
            checksum: try! Checksum(sha256: String(repeating: "0f", count: 32)), status: .completed(size: 42),
            ownsFile: true),
        Entry(id: 2, url: URL(string: "https://a.example/part.bin")!, name: "part.bin", status: .pending),
        Entry(id: 3, url: URL(string: "https://b.example/held.bin")!, name: "held.bin", status: .suspended),
        Entry(
            id: 5, url: URL(string: "https://b.example/x")!, name: "x",
            status: .failed(
                .init(kind: .httpStatus, message: "HTTP 404 Not Found for https://b.example/x", status: 404))),
        Entry(id: 6, url: URL(string: "https://b.example/c")!, name: "c", status: .cancelled),
        Entry(id: 7, url: URL(string: "https://b.example/again")!, name: "again", status: .pending, ownsFile: true),
    ]

    static func journal(_ entries: [Entry] = entries, nextID: UInt64 = 9) -> Data {
        let (header, records) = DownloadJournal.compacted(entries, nextID: nextID)
        return DownloadJournal.encode(header: header, records)
    }

    @Test func aCompactedJournalSaysWhatItWasGiven() throws {
        let contents = try DownloadJournal.parse(Self.journal())
        #expect(contents.entries == Self.entries)
        #expect(contents.nextID == 9)
        #expect(contents.ignoredLines == 0)
    }

    @Test func theFormatIsJSONLinesWithAVersionedHeader() throws {
        let text = String(decoding: Self.journal(), as: UTF8.self)
        let lines = text.split(separator: "\n")
        #expect(lines.first == #"{"format":"jobkit-downloads","next":9,"version":1}"#)
        #expect(
            lines[1]
                == #"{"checksum":"sha-256=\#(String(repeating: "0f", count: 32))","id":1,"name":"done.bin","op":"add","url":"https://a.example/done.bin"}"#
        )
        #expect(lines[2] == #"{"id":1,"op":"done","size":42}"#)
        #expect(text.hasSuffix("\n"))
    }

    @Test func oddNamesAndReasonsSurviveTheJournal() throws {
        let entries = [
            Entry(
                id: 1, url: URL(string: "https://a.example/%22q%22")!, name: "a \"quoted\" \\ näme 🎉.bin",
                status: .failed(.init(kind: .other, message: "line one\nline\ttwo \u{1} end")))
        ]
        let data = Self.journal(entries)
        #expect(try DownloadJournal.parse(data).entries == entries)
        // The same bytes JSONEncoder writes with sorted keys.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let (_, records) = DownloadJournal.compacted(entries, nextID: 2)
        let expected = try records.map { String(decoding: try encoder.encode($0), as: UTF8.self) + "\n" }.joined()
        #expect(String(decoding: DownloadJournal.encode(records), as: UTF8.self) == expected)
    }

    @Test func aTornLastLineIsIgnored() throws {
        var data = Self.journal()
        data.append(Data(#"{"op":"done","id":2,"si"#.utf8))

        let contents = try DownloadJournal.parse(data)

        #expect(contents.entries == Self.entries)
        #expect(contents.ignoredLines == 1)
    }

    @Test func laterRecordsChangeEarlierOnes() throws {
        var data = Self.journal()
        let records: [DownloadJournal.Record] = [
            .state(2, .suspended),
            DownloadJournal.Record(op: .finishing, id: 3, size: 10),
            DownloadJournal.Record(op: .remove, id: 6),
            DownloadJournal.Record(op: .done, id: 99, size: 1),  // an unknown id: ignored
            .add(12, url: URL(string: "https://c.example/n")!, name: "n", checksum: nil),
        ]
        data.append(DownloadJournal.encode(records))
        data.append(Data("{\"op\":\"frobnicate\",\"id\":1}\nnot json at all\n".utf8))

        let contents = try DownloadJournal.parse(data)

        #expect(contents.entries.map(\.id) == [1, 2, 3, 5, 7, 12])
        #expect(contents.entries[1].status == .suspended)
        #expect(contents.entries[2].status == .finishing(size: 10))
        #expect(contents.entries[2].ownsFile)
        #expect(contents.nextID == 13)
        #expect(contents.ignoredLines == 3)
    }

    @Test func anUnknownVersionOrAnotherFileIsRefused() throws {
        let newer = Data((#"{"format":"jobkit-downloads","version":2}"# + "\n").utf8)
        #expect(throws: DownloadJournal.ReadError.unsupportedVersion(2)) { try DownloadJournal.parse(newer) }
        let other = Data((#"{"format":"something-else","version":1}"# + "\n").utf8)
        #expect(throws: DownloadJournal.ReadError.notAJournal) { try DownloadJournal.parse(other) }
        #expect(throws: DownloadJournal.ReadError.notAJournal) {
            try DownloadJournal.parse(Data("hello\nworld\n".utf8))
        }
    }

    /// Found by a probe: an id near `UInt64.max` trapped on overflow each time the folder was opened.
    @Test func idsNearTheTopOfTheRangeAreRefusedNotOverflowed() throws {
        let header = #"{"format":"jobkit-downloads","version":1}"#
        let hugeID = Data(
            (header + "\n" + #"{"op":"add","id":18446744073709551615,"url":"http://h/a","name":"a"}"# + "\n").utf8)
        let contents = try DownloadJournal.parse(hugeID)
        #expect(contents.entries.isEmpty)
        #expect(contents.ignoredLines == 1)
        #expect(contents.nextID == 1)
        let hugeNext = Data((#"{"format":"jobkit-downloads","version":1,"next":18446744073709551615}"# + "\n").utf8)
        #expect(throws: DownloadJournal.ReadError.notAJournal) { try DownloadJournal.parse(hugeNext) }
    }

    /// Whatever a server answered, a failure's record stays far below the longest line a journal
    /// reads back: its reason is cut at a character's end.
    @Test func aFailureWithAHugeReasonIsRecordedShortAndReadBack() throws {
        let zalgo = "e" + String(repeating: "\u{301}", count: 20_000)  // one character of 40 KB
        let reason = String(repeating: "ä", count: 300_000) + zalgo
        let failure = DownloadManager.ItemError(kind: .httpStatus, message: reason, status: 500)
        var data = Self.journal([Entry(id: 1, url: URL(string: "https://a.example/f")!, name: "f", status: .pending)])
        data.append(DownloadJournal.encode([.state(1, .failed(failure))]))

        #expect(data.count < DownloadJournal.Reader.maximumLineLength)
        let read = try DownloadJournal.parse(data)
        guard case .failed(let kept) = read.entries.first?.status else {
            Issue.record("the failure was not read back: \(read)")
            return
        }
        #expect(kept.status == 500)
        #expect(kept.message == String(repeating: "ä", count: 2_000), "the first 2,000 characters, whole")
        #expect(DownloadJournal.Record.shortened(zalgo).isEmpty, "a character is never cut")
        #expect(DownloadJournal.Record.shortened("short") == "short")
    }

    @Test func anEmptyJournalOrATornHeaderIsAnEmptyQueue() throws {
        #expect(try DownloadJournal.parse(Data()).entries.isEmpty)
        #expect(try DownloadJournal.parse(Data(#"{"format":"jobkit-dow"#.utf8)).entries.isEmpty)
    }

    @Test func theJournalFileHoldsTheDirectoryAcrossCompaction() throws {
        let folder = try scratchFolder()
        let (file, read) = try JournalFile.open(directory: folder)
        #expect(read == DownloadJournal.Contents())
        #expect(throws: DownloadManagerError.directoryInUse(folder.standardizedFileURL.path)) {
            _ = try JournalFile.open(directory: folder)
        }

        try file.replace(with: Self.journal())
        try file.append(DownloadJournal.encode([.state(2, .cancelled)]))

        #expect(throws: DownloadManagerError.directoryInUse(folder.standardizedFileURL.path)) {
            _ = try JournalFile.open(directory: folder)
        }
        #expect(!FileManager.default.fileExists(atPath: file.path + ".tmp"))
        file.close()
        let (reopened, contents) = try JournalFile.open(directory: folder)
        #expect(contents.entries[1].status == .cancelled)
        reopened.close()
    }

    @Test func aNewerJournalIsLeftAsItIs() throws {
        let folder = try scratchFolder()
        let journal = folder.appendingPathComponent(".jobkit-downloads.journal")
        let newer = Data((#"{"format":"jobkit-downloads","version":2,"next":4}"# + "\n{\"op\":\"warp\"}\n").utf8)
        try newer.write(to: journal)

        let error = #expect(throws: DownloadManagerError.self) {
            _ = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
        }

        #expect(error?.localizedDescription.contains("it has version 2; this JobKit reads version 1") == true)
        #expect(try Data(contentsOf: journal) == newer)
        // The directory is free again for a manager that can read it… after the file is dealt with.
        try FileManager.default.removeItem(at: journal)
        try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog())).close()
    }

    /// A journal of many items is written in chunks of at most 1,024 records, the header with the
    /// first, which together are exactly the journal `encode` makes — for 0, 1, 1,024 and 2,500 items.
    @Test(arguments: [0, 1, 1_024, 2_500])
    func aCompactedJournalIsWrittenInChunksThatMakeTheWholeJournal(items: Int) throws {
        let url = URL(string: "https://a.example/f")!
        let statuses: [DownloadJournal.Entry.Status] = [.completed(size: 7), .pending, .suspended, .finishing(size: 3)]
        let entries = (0..<items).map { index -> DownloadJournal.Entry in
            // A `done` or `finishing` record says the file is the manager's; a suspended item may own it
            // too (a `finishing` of size 0 then keeps that).
            let owns = index % 4 == 2 ? index.isMultiple(of: 3) : index % 4 != 1
            return DownloadJournal.Entry(
                id: UInt64(index + 1), url: url, name: "f\(index)", checksum: nil, status: statuses[index % 4],
                ownsFile: owns)
        }
        let (header, records) = DownloadJournal.compacted(entries, nextID: UInt64(items + 1))
        let chunks = Array(DownloadJournal.encodedChunks(header: header, records))
        #expect(chunks.count == max(1, (records.count + 1_023) / 1_024))
        #expect(chunks.reduce(Data(), +) == DownloadJournal.encode(header: header, Array(records)))
        #expect(records.count == Array(records).count)
        let contents = try DownloadJournal.parse(chunks.reduce(Data(), +))
        #expect(contents.entries.count == entries.count)
        #expect(contents.entries == entries, "the journal read back says what it was given")
    }

    @Test func aFinishingOrDoneRecordWithAURLGivesTheItemThatURL() throws {
        let lines = [
            #"{"format":"jobkit-downloads","next":3,"version":1}"#,
            #"{"id":1,"name":"a.bin","op":"add","url":"https://a.example/a"}"#,
            #"{"id":1,"op":"done","size":10}"#,
            #"{"id":1,"op":"finishing","size":20,"url":"https://b.example/a2"}"#,
            #"{"id":2,"name":"b.bin","op":"add","url":"https://a.example/b"}"#,
            #"{"id":2,"op":"done","size":5,"url":"file:///etc/passwd"}"#,
        ]
        let contents = try DownloadJournal.parse(Data((lines.joined(separator: "\n") + "\n").utf8))

        #expect(contents.entries.map(\.url.absoluteString) == ["https://b.example/a2", "https://a.example/b"])
        #expect(contents.entries.map(\.status) == [.finishing(size: 20), .pending])
        #expect(contents.problems.count == 1, "the record with a URL that is not http(s) is refused")
    }
}
