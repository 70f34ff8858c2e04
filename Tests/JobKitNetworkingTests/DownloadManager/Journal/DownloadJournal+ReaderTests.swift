import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The journal read a block at a time: what a block boundary cuts makes no difference, and what a
/// planted journal holds (huge lines, millions of refused records) cannot make memory grow.
@Suite struct DownloadJournalReaderTests {
    /// The sample journal, a torn last line and an empty line added, read in `size`-byte blocks.
    static func read(_ data: Data, blocksOf size: Int) throws(DownloadJournal.ReadError) -> DownloadJournal.Contents {
        var reader = DownloadJournal.Reader()
        var failure: DownloadJournal.ReadError?
        data.withUnsafeBytes { bytes in
            var start = 0
            while start < bytes.count, failure == nil {
                let end = min(start + size, bytes.count)
                do throws(DownloadJournal.ReadError) {
                    try reader.read(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                } catch {
                    failure = error
                }
                start = end
            }
        }
        if let failure { throw failure }
        return try reader.finish()
    }

    static let journal: Data = {
        var data = DownloadJournalTests.journal()
        data.append(Data("\n".utf8))
        data.append(DownloadJournal.encode([.state(2, .cancelled), .state(99, .suspended)]))
        data.append(Data(#"{"op":"remove","id":"#.utf8))  // torn by a kill
        return data
    }()

    @Test(arguments: [1, 2, 3, 7, 64, 1 << 16])
    func anyBlockSizeReadsWhatTheWholeSays(size: Int) throws {
        let whole = try DownloadJournal.parse(Self.journal)
        #expect(whole.entries.count == DownloadJournalTests.entries.count)
        #expect(whole.entries[1].status == .cancelled)
        #expect(whole.ignoredLines == 2, "the record of an unknown item and the torn last line")
        #expect(try Self.read(Self.journal, blocksOf: size) == whole)
    }

    @Test func aLineOverTheMaximumIsSkippedWithoutBeingKept() throws {
        var data = DownloadJournalTests.journal()
        data.append(Data(repeating: UInt8(ascii: "x"), count: DownloadJournal.Reader.maximumLineLength + 1))
        data.append(Data("\n".utf8))
        data.append(DownloadJournal.encode([.state(2, .cancelled)]))
        let contents = try Self.read(data, blocksOf: 1 << 16)
        #expect(contents.entries.count == DownloadJournalTests.entries.count)
        #expect(contents.entries[1].status == .cancelled, "the lines after it are read")
        #expect(contents.ignoredLines == 1)
    }

    @Test func aFirstLineThatIsNoHeaderIsNoJournalHoweverLong() {
        let long =
            Data(repeating: UInt8(ascii: "{"), count: DownloadJournal.Reader.maximumLineLength + 10) + Data("\n".utf8)
        #expect(throws: DownloadJournal.ReadError.notAJournal) { try Self.read(long, blocksOf: 1 << 16) }
        #expect(throws: DownloadJournal.ReadError.notAJournal) { try Self.read(Data("hello\n".utf8), blocksOf: 1) }
        // A header torn as the journal was made, nothing after it: an empty queue.
        let torn = try? Self.read(Data(#"{"format":"jobkit-d"#.utf8), blocksOf: 3)
        #expect(torn == DownloadJournal.Contents())
        // A whole header without its newline: an empty queue that goes on from its `next`.
        let header = try? Self.read(Data(#"{"format":"jobkit-downloads","version":1,"next":7}"#.utf8), blocksOf: 5)
        #expect(header?.nextID == 7)
    }

    @Test func refusedRecordsKeepAHundredProblemsAndCountTheRest() throws {
        var data = DownloadJournal.encode(header: .init(format: "jobkit-downloads", version: 1, next: 1), [])
        for id in 1...1_000 {
            data.append(Data((#"{"op":"add","id":\#(id),"url":"file:///etc/passwd","name":"n\#(id)"}"# + "\n").utf8))
        }
        let contents = try Self.read(data, blocksOf: 4_096)
        #expect(contents.entries.isEmpty)
        #expect(contents.ignoredLines == 1_000)
        #expect(contents.problems.count == DownloadJournal.Reader.maximumProblems + 1)
        #expect(contents.problems.first?.hasPrefix("line 2: item 1 has no http(s) URL") == true)
        #expect(contents.problems.last == "and 900 more lines refused")
    }

    /// A planted journal of about 74 MiB (lines over the maximum, records of an unknown item) opens a
    /// manager in far less memory than the file: read whole, it took the whole file and more.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status")))
    func aHugeJournalOpensInBoundedMemory() async {
        // In a child process, so that the peak resident set is this manager's alone.
        let child = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent(".jobkit-downloads.journal").path
            _ = FileManager.default.createFile(atPath: path, contents: DownloadJournalTests.journal())
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seekToEnd()
            var long = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
            long.append(Data("\n".utf8))
            let records = Data(
                String(repeating: #"{"op":"state","id":4,"state":"pending"}"# + "\n", count: 1 << 12).utf8)
            for _ in 0..<64 {
                try handle.write(contentsOf: long)
                try handle.write(contentsOf: records)
            }
            try handle.close()
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            // A manager on an empty folder first: what any manager takes is not counted.
            let empty = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: empty) }
            try DownloadManager(directory: empty, configuration: testConfiguration(UpdateLog())).close()
            let before = UploadMemoryTests.peakResident() ?? 0

            let manager = try DownloadManager(directory: folder, configuration: testConfiguration(UpdateLog()))
            let restored = manager.items.count
            manager.close()

            let grew = (UploadMemoryTests.peakResident() ?? .max) - before
            let bound = (isThreadSanitized ? 32 : 16) * 1024 * 1024
            guard size > 64 << 20, restored == DownloadJournalTests.entries.count, grew < bound else {
                FileHandle.standardError.write(
                    Data("journal \(size >> 20) MiB, \(restored) items, peak grew by \(grew >> 20) MiB\n".utf8))
                exit(1)
            }
        }
        if let child, child.exitStatus != .exitCode(0) {
            Issue.record(Comment(rawValue: String(decoding: child.standardErrorContent, as: UTF8.self)))
        }
    }
}
