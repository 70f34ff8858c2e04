import Foundation
import Testing

@testable import JobKit

/// A trace is written through its path, as a shell's `>` writes: never swapping what the path names.
@Suite struct TraceFileTests {
    private func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-trace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func aSymbolicLinkStaysALinkAndItsTargetGetsTheTrace() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("target.json")
        let link = folder.appendingPathComponent("link.json")
        try Data("keep".utf8).write(to: target)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        try ChromeTraceWriter().write(to: link)

        let destination = try FileManager.default.destinationOfSymbolicLink(atPath: link.path)
        #expect(destination == target.path)
        #expect(try String(contentsOf: target, encoding: .utf8).contains("traceEvents"))
    }

    @Test func aLongerFileIsEmptiedFirstAndANewOneIsCreated() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = folder.appendingPathComponent("old.svg")
        try Data(repeating: 0x41, count: 1 << 20).write(to: old)
        try TimelineSVGWriter().write(to: old)
        let written = try String(contentsOf: old, encoding: .utf8)
        #expect(written.contains("<svg") && !written.contains("AAAA"))

        let new = folder.appendingPathComponent("new.json")
        try ChromeTraceWriter().write(to: new)
        #expect(FileManager.default.fileExists(atPath: new.path))
    }

    @Test func aMissingFolderOrADirectoryIsAnErrorNamingThePath() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("nope/trace.json")
        #expect(throws: (any Error).self) { try ChromeTraceWriter().write(to: missing) }
        do {
            try ChromeTraceWriter().write(to: folder)
            Issue.record("a directory is not written over")
        } catch {
            #expect(error.localizedDescription.contains(folder.path), "\(error.localizedDescription)")
        }
    }

    @Test func aDeviceIsWrittenToNotReplaced() throws {
        try ChromeTraceWriter().write(to: URL(fileURLWithPath: "/dev/null"))
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
    }
}
