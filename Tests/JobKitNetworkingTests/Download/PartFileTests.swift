import Foundation
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// The `.part`'s lock against other holders (another process, or a child being started that shares
/// this process's descriptors until it runs its program).
@Suite struct PartFileTests {
    /// Opens and locks the `.part` of `destination` as another holder would; returns the descriptor.
    func lockPart(of destination: URL) throws -> Int32 {
        // Close-on-exec: a child another test starts meanwhile must not inherit the lock.
        let descriptor = open(destination.path + ".part", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0 && flock(descriptor, LOCK_EX) == 0)
        return descriptor
    }

    @Test func aLockReleasedWithinThePatienceIsWaitedFor() throws {
        let destination = try scratchFolder().appendingPathComponent("brief.bin")
        let other = try lockPart(of: destination)
        // A thread of its own, not the shared pool: the release must not wait for a busy pool.
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            close(other)
        }

        let part = try PartFile.open(destination: destination, patience: 30_000_000_000)
        defer { part.close() }

        #expect(part.length == 0)
    }

    /// The holder removes its empty `.part` before it lets go (its download failed before a byte): the
    /// waiter's lock is then on a file no longer under the name, and it opens the `.part` anew — the
    /// bytes it writes are in the folder.
    @Test func aPartItsHolderRemovedBeforeLettingGoIsOpenedAnew() throws {
        let destination = try scratchFolder().appendingPathComponent("gone.bin")
        let other = try lockPart(of: destination)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            unlink(destination.path + ".part")
            close(other)
        }

        let part = try PartFile.open(destination: destination, patience: 30_000_000_000)
        defer { part.close() }
        try Data("kept".utf8).withUnsafeBytes { try part.write($0) }

        #expect(try Data(contentsOf: URL(fileURLWithPath: destination.path + ".part")) == Data("kept".utf8))
    }

    @Test func aLockHeldPastThePatienceIsBusyAndLeavesNothingClaimed() throws {
        let destination = try scratchFolder().appendingPathComponent("held.bin")
        let other = try lockPart(of: destination)

        #expect(throws: DownloadError(kind: .destinationBusy, path: destination.path)) {
            try PartFile.open(destination: destination, patience: 50_000_000)
        }
        close(other)
        // The failed attempt released its claim in this process: the destination opens now (with the
        // patience a child forked meanwhile needs to run its program and let go of the lock).
        let part = try PartFile.open(destination: destination, patience: 5_000_000_000)
        part.close()
    }
}
