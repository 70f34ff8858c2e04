import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// `Configuration.subfolder`: a manager on a folder under its directory, reached without following a link.
@Suite(.timeLimit(.minutes(10))) struct DownloadManagerSubfolderTests {
    private func configuration(_ log: UpdateLog, subfolder: String) -> DownloadManager.Configuration {
        var configuration = testConfiguration(log)
        configuration.subfolder = subfolder
        return configuration
    }

    @Test func filesAndTheJournalGoToTheSubfolderMadeWhenMissing() async throws {
        let server = try ScriptedServer { _, _ in .respond(200, body: pattern(3000)) }
        defer { server.stop() }
        let root = try scratchFolder()
        let log = UpdateLog()
        let manager = try DownloadManager(
            directory: root, configuration: configuration(log, subfolder: "a/b"), resultQueue: log.queue,
            onUpdate: log.handler)
        #expect(manager.directory.path == root.appendingPathComponent("a/b").standardizedFileURL.path)
        _ = try manager.add(server.url("file.bin"))
        let summary = await manager.waitUntilFinished()
        manager.close()
        #expect(summary.items.map(\.state) == [.completed])
        #expect(try Data(contentsOf: root.appendingPathComponent("a/b/file.bin")) == pattern(3000))
        #expect(
            FileManager.default.fileExists(atPath: root.appendingPathComponent("a/b/.jobkit-downloads.journal").path))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(".jobkit-downloads.journal").path))
    }

    @Test(arguments: ["link", "real/link", "link/deeper"])
    func aSymbolicLinkAtAnyComponentIsNeverFollowed(_ subfolder: String) throws {
        let root = try scratchFolder()
        let outside = try scratchFolder()
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("real"), withIntermediateDirectories: true)
        for link in ["link", "real/link"] {
            try FileManager.default.createSymbolicLink(
                at: root.appendingPathComponent(link), withDestinationURL: outside)
        }
        let log = UpdateLog()
        #expect {
            _ = try DownloadManager(
                directory: root, configuration: configuration(log, subfolder: subfolder), resultQueue: log.queue,
                onUpdate: log.handler)
        } throws: { error in
            guard case .cannotUseDirectory(_, let reason) = error as? DownloadManagerError else { return false }
            return reason.contains("never reached through a link")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written there")
    }

    @Test(arguments: ["..", "a/../b", "/etc", "a//b", ".", "a/.jobkit-x", ""])
    func aComponentThatIsNotAFolderNameIsRefused(_ subfolder: String) throws {
        let root = try scratchFolder()
        let log = UpdateLog()
        #expect {
            _ = try DownloadManager(
                directory: root, configuration: configuration(log, subfolder: subfolder), resultQueue: log.queue,
                onUpdate: log.handler)
        } throws: { error in
            guard case .cannotUseDirectory = error as? DownloadManagerError else { return false }
            return true
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty, "nothing was made")
    }
}
