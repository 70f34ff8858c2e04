import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real file system behind the `DownloadFolder` and `DownloadFile` seam: each call is the system
/// call it names, on the folder's own descriptor.
@Suite struct POSIXDownloadFileTests {
    private func folder() throws -> (URL, any DownloadFolder) {
        let url = try scratchFolder()
        return (url, try POSIXFileSystem().openDirectory(atPath: url.path).get())
    }

    @Test func writesReadsTruncatesAndSeeksAsTheSystemCallsDo() throws {
        let (url, folder) = try folder()
        let file = try folder.openOwnedFile("data.bin", O_RDWR | O_CREAT).get()
        defer { file.close() }
        #expect(Data("hello".utf8).withUnsafeBytes { file.write($0) } == nil)
        #expect(Data("HE".utf8).withUnsafeBytes { file.write($0, at: 0) } == nil)
        #expect(Data("!".utf8).withUnsafeBytes { file.write($0) } == nil)  // the position did not move
        #expect(file.size() == 6)
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { file.read(into: $0, at: 1) }
        #expect(try count.get() == 5)
        #expect(Array(buffer[0..<5]) == Array("Ello!".utf8))
        #expect(file.truncate(to: 2) == nil)
        #expect(file.seek(to: 2) == nil)
        #expect(Data("Y".utf8).withUnsafeBytes { file.write($0) } == nil)
        #expect(file.sync() == nil)
        #expect(try Data(contentsOf: url.appendingPathComponent("data.bin")) == Data("HEY".utf8))
    }

    @Test func aFileIsTheOneItsNameShowsUntilTheNameMovesOn() throws {
        let (_, folder) = try folder()
        let file = try folder.openFile("a", O_RDWR | O_CREAT).get()
        defer { file.close() }
        #expect(file.identity() != nil)
        #expect(file.identity() == folder.identity(of: "a"))
        let other = try folder.openFile("b", O_RDWR | O_CREAT).get()
        other.close()
        #expect(folder.rename("b", to: "a", replacing: true) == nil)
        #expect(file.identity() != folder.identity(of: "a"))
        #expect(folder.identity(of: "missing") == nil)
        #expect(folder.identity(of: "../a") == nil)
    }

    @Test func restrictingToTheOwnerNarrowsWiderPermissions() throws {
        let (url, folder) = try folder()
        let file = try folder.openFile("journal", O_RDWR | O_CREAT, mode: 0o644).get()
        defer { file.close() }
        let path = url.appendingPathComponent("journal").path
        #expect(chmod(path, 0o644) == 0)
        file.restrictToOwner()
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    /// A duplicate shares the lock (as `dup` does): the lock lasts until both are closed.
    @Test func aDuplicateSharesTheLockUntilBothAreClosed() throws {
        let (_, folder) = try folder()
        let file = try folder.openFile("locked", O_RDWR | O_CREAT).get()
        #expect(file.lockExclusively(until: 0) == nil)
        let copy = try file.duplicate().get()
        file.close()
        let other = try folder.openFile("locked", O_RDWR).get()
        defer { other.close() }
        #expect(other.lockExclusively(until: 0) == EWOULDBLOCK)
        copy.close()
        #expect(other.lockExclusively(until: 0) == nil)
    }

    @Test func aNameThatIsNotOneEntryIsRefused() throws {
        let (_, folder) = try folder()
        for name in ["", ".", "..", "a/b", "../x"] {
            #expect(throws: POSIXError(.EINVAL)) { try folder.openFile(name, O_RDWR | O_CREAT).get() }
            #expect(folder.unlink(name) == .EINVAL)
            #expect(folder.rename(name, to: "x", replacing: false) == .EINVAL)
            #expect(folder.facts(name) == .missing)
        }
    }
}
