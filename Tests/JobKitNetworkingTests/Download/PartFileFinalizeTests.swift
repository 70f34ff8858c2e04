import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// What the `.part`'s finalize does with something that appeared under the destination's name.
@Suite struct PartFileFinalizeTests {
    /// A folder that appeared under the name while the download ran fails the finalize with
    /// `destinationExists`, as a file does (the docs of `Job<URL>.download` and `DownloadError`):
    /// the folder and the `.part` are left as they are.
    @Test func aFolderThatAppearedIsDestinationExistsAndTheRenameLeavesBothAlone() throws {
        let folder = try scratchFolder()
        let destination = folder.appendingPathComponent("late.bin")
        let part = try PartFile.open(destination: destination, patience: 0)
        defer { part.close() }
        try Data("complete".utf8).withUnsafeBytes { try part.write($0) }
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
        try Data("theirs".utf8).write(to: destination.appendingPathComponent("inside"))

        #expect(throws: DownloadError(kind: .destinationExists, path: destination.path)) {
            try part.finalize(.process, unless: { false })
        }
        #expect(try Data(contentsOf: destination.appendingPathComponent("inside")) == Data("theirs".utf8))
        #expect(try Data(contentsOf: folder.appendingPathComponent("late.bin.part")) == Data("complete".utf8))
    }

    /// A replacing finalize (`replacesExistingFile`) replaces a file, never a folder: that one says
    /// the destination is a directory.
    @Test func aReplacingFinalizeOverAFolderSaysItIsADirectory() throws {
        let folder = try scratchFolder()
        let handle = try DirectoryHandle.open(folder.path).get()
        let part = try PartFile.open("late.bin", in: handle, replacing: true, patience: 0)
        defer { part.close() }
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("late.bin"), withIntermediateDirectories: false)

        #expect(throws: DownloadError(kind: .destinationIsDirectory, path: folder.path + "/late.bin")) {
            try part.finalize(.process, unless: { false })
        }
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("late.bin.part").path))
    }
}
