import Foundation
import Testing

@testable import JobKitServer

/// The in-memory cache of small files: bounded, and never stale.
@Suite struct FileCacheTests {
    private func folder() throws -> URL {
        let folder = temporaryRoot()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    private func contents(_ cache: FileCache, _ file: URL) -> Data? {
        guard let info = FileInfo(path: file.path), let buffer = cache.contents(of: file.path, info) else {
            return nil
        }
        return Data(buffer: buffer)
    }

    @Test func holdsAtMostItsFileCountAndBytes() throws {
        let folder = try folder()
        let cache = FileCache()
        for index in 0..<(FileCache.maximumEntryCount + 20) {
            let file = folder.appendingPathComponent("small-\(index)")
            try Data(repeating: UInt8(index % 256), count: 100).write(to: file)
            #expect(contents(cache, file) == Data(repeating: UInt8(index % 256), count: 100))
        }
        #expect(cache.usage.files <= FileCache.maximumEntryCount)
        for index in 0..<12 {
            let file = folder.appendingPathComponent("large-\(index)")
            try Data(repeating: 7, count: FileCache.maximumFileBytes).write(to: file)
            #expect(contents(cache, file)?.count == FileCache.maximumFileBytes)
        }
        #expect(cache.usage.bytes <= FileCache.maximumTotalBytes)
        let huge = folder.appendingPathComponent("huge")
        try Data(count: FileCache.maximumFileBytes + 1).write(to: huge)
        #expect(contents(cache, huge) == nil, "larger files are streamed, not kept")
    }

    @Test func aChangedFileIsReadAgain() throws {
        let file = try folder().appendingPathComponent("note.txt")
        let cache = FileCache()
        try Data("one".utf8).write(to: file)
        #expect(contents(cache, file) == Data("one".utf8))
        try Data("three".utf8).write(to: file)
        #expect(contents(cache, file) == Data("three".utf8))
        #expect(cache.usage.files == 1)
    }
}
