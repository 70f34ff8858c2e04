import Foundation
import Hummingbird
import JobKit
import NIOCore

/// Receives a request body into a file: a temporary beside the destination, synced, then renamed.
enum UploadFile {
    static let temporaryPrefix = ".upload-"

    enum Failure: Error, Equatable {
        /// More than the limit arrived.
        case tooLarge
        /// Fewer bytes arrived than `Content-Length` promised.
        case truncated(received: Int, expected: Int)
        /// The body stream failed (a malformed chunk, a dropped connection).
        case body(String)
        /// A file operation failed with this `errno`.
        case disk(String, Int32)
    }

    /// Streams `body` into `destination`; returns its size. On any failure the temporary file is removed and
    /// the destination is untouched. File writes are plain blocking calls, each at most one chunk.
    static func receive(
        _ body: some AsyncSequence<ByteBuffer, any Error>, to destination: URL, maxBytes: Int, expectedBytes: Int?
    ) async throws(Failure) -> Int {
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent("\(temporaryPrefix)\(UUID().uuidString).part").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .disk("open", errno) }
        var isOpen = true
        defer {
            if isOpen { close(descriptor) }
            unlink(temporary)  // after a successful rename the name is gone already
        }
        var received = 0
        do {
            for try await chunk in body {
                received += chunk.readableBytes
                if received > maxBytes { throw Failure.tooLarge }
                try writeAll(chunk, to: descriptor)
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .body(String(describing: type(of: error)))
        }
        if let expectedBytes, received != expectedBytes {
            throw .truncated(received: received, expected: expectedBytes)
        }
        guard fsync(descriptor) == 0 else { throw .disk("fsync", errno) }
        isOpen = false
        guard close(descriptor) == 0 else { throw .disk("close", errno) }
        guard rename(temporary, destination.path) == 0 else { throw .disk("rename", errno) }
        syncDirectory(of: destination)
        return received
    }

    private static func writeAll(_ chunk: ByteBuffer, to descriptor: Int32) throws(Failure) {
        let failure = chunk.withUnsafeReadableBytes { POSIXFile.writeAll($0, to: descriptor) }
        if let failure { throw .disk("write", failure) }
    }

    /// Makes a rename in the folder durable (best effort: a folder that cannot be opened is skipped).
    static func syncDirectory(of file: URL) {
        let folder = open(file.deletingLastPathComponent().path, O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else { return }
        fsync(folder)
        close(folder)
    }
}
