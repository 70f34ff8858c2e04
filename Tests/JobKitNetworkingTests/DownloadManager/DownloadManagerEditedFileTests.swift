import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A completed file the user changed since is theirs: `remove(deletingFile:)` leaves it, as a restore
/// does (found by the simulation, issue 22).
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerEditedFileTests {
    /// On a file system in memory, a scripted transport and a test scheduler: the edit is an append
    /// in place (the same file, a new length).
    @Test func removeDeletingFileLeavesACompletedFileTheUserChangedSince() async throws {
        let world = MemoryDownloads(bytes: pattern(100))
        let manager = try world.open()
        defer { manager.close() }
        let edited = try manager.add(URL(string: "http://scripted.test/edited.bin")!)
        let untouched = try manager.add(URL(string: "http://scripted.test/untouched.bin")!)
        _ = await manager.waitUntilFinished()
        try world.append(Data("my notes".utf8), to: "edited.bin")

        try manager.remove(edited, deletingFile: true)
        try manager.remove(untouched, deletingFile: true)

        // Its record written, the remove unlinks the file itself: gone when it returns.
        #expect(world.contents(of: "untouched.bin") == nil, "the untouched file is removed")
        #expect(
            world.contents(of: "edited.bin") == pattern(100) + Data("my notes".utf8), "the edited file stays as it is")
    }
}
