import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A completed file the user changed since is theirs: `remove(deletingFile:)` leaves it, as a restore
/// does (found by the simulation, issue 22).
@Suite(.timeLimit(.minutes(2))) struct DownloadManagerEditedFileTests {
    @Test func removeDeletingFileLeavesACompletedFileTheUserChangedSince() async throws {
        let folder = try scratchFolder()
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(100)) }
        defer { server.stop() }
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: folder, configuration: testConfiguration(log), onUpdate: log.handler)
        defer { manager.close() }
        let edited = try manager.add(server.url("edited.bin"))
        let untouched = try manager.add(server.url("untouched.bin"))
        _ = await manager.waitUntilFinished()
        let file = folder.appendingPathComponent("edited.bin")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("my notes".utf8))
        try handle.close()

        try manager.remove(edited, deletingFile: true)
        try manager.remove(untouched, deletingFile: true)

        // Its record written, the remove unlinks the file itself: gone when it returns.
        #expect(!exists(folder.appendingPathComponent("untouched.bin")), "the untouched file is removed")
        #expect(try Data(contentsOf: file) == pattern(100) + Data("my notes".utf8), "the edited file stays as it is")
    }
}
