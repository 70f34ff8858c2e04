import Foundation
import NIOCore
import Testing

@testable import JobKitServer

/// Uploads: streamed to a temporary file, renamed when complete, limits enforced while streaming.
@Suite struct UploadTests {
    /// Chunks handed out one by one; before each, `check` sees how many bytes were handed out so far.
    private struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        var chunks: [ByteBuffer]
        var failure: (any Error)?
        var check: @Sendable (Int) -> Void

        struct AsyncIterator: AsyncIteratorProtocol {
            var remaining: [ByteBuffer]
            var failure: (any Error)?
            var check: @Sendable (Int) -> Void
            var handedOut = 0

            mutating func next() async throws -> ByteBuffer? {
                check(handedOut)
                guard !remaining.isEmpty else {
                    if let failure { throw failure }
                    return nil
                }
                let chunk = remaining.removeFirst()
                handedOut += chunk.readableBytes
                return chunk
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(remaining: chunks, failure: failure, check: check)
        }
    }

    private struct Dropped: Error {}

    private func temporaryFiles(in folder: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix(UploadFile.temporaryPrefix) }.map { folder.appendingPathComponent($0) }
    }

    private func folder() throws -> URL {
        let folder = temporaryRoot()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func chunksAreWrittenToATemporaryFileAsTheyArrive() async throws {
        let folder = try folder()
        let destination = folder.appendingPathComponent("video.bin")
        let chunks = (0..<8).map { ByteBuffer(repeating: UInt8($0), count: 4096) }
        let size = try await UploadFile.receive(
            Chunks(chunks: chunks, failure: nil) { handedOut in
                // Everything handed out so far is on disk before the next chunk is asked for.
                let files = self.temporaryFiles(in: folder)
                let written = files.first.flatMap { try? FileManager.default.attributesOfItem(atPath: $0.path) }
                #expect(files.count == 1)
                #expect((written?[.size] as? Int) == handedOut)
                #expect(!FileManager.default.fileExists(atPath: destination.path), "renamed only when complete")
            }, to: destination, maxBytes: 1 << 20, expectedBytes: 8 * 4096)
        #expect(size == 8 * 4096)
        #expect(try Data(contentsOf: destination) == Data(chunks.map { Data(buffer: $0) }.joined()))
        #expect(temporaryFiles(in: folder).isEmpty)
    }

    @Test func aBodyThatFailsLeavesNoTemporaryFileAndTheOldFile() async throws {
        let folder = try folder()
        let destination = folder.appendingPathComponent("photo.jpg")
        try Data("old".utf8).write(to: destination)
        let chunks = [ByteBuffer(string: "new part")]
        await #expect(throws: UploadFile.Failure.body("Dropped")) {
            try await UploadFile.receive(
                Chunks(chunks: chunks, failure: Dropped()) { _ in }, to: destination, maxBytes: 100,
                expectedBytes: nil)
        }
        await #expect(throws: UploadFile.Failure.truncated(received: 8, expected: 50)) {
            try await UploadFile.receive(
                Chunks(chunks: chunks, failure: nil) { _ in }, to: destination, maxBytes: 100, expectedBytes: 50)
        }
        await #expect(throws: UploadFile.Failure.tooLarge) {
            try await UploadFile.receive(
                Chunks(chunks: chunks + chunks, failure: nil) { _ in }, to: destination, maxBytes: 10,
                expectedBytes: nil)
        }
        #expect(try Data(contentsOf: destination) == Data("old".utf8))
        #expect(temporaryFiles(in: folder).isEmpty)
    }

    @Test func oversizedUploadsAre413NamingTheLimit() async throws {
        try await withServer(maxUploadBytes: 1024) { server, root in
            let answer = try await request(server, "media/big.bin", method: "PUT", body: Data(count: 4096))
            #expect(answer.status == 413)
            #expect(answer.errorMessage?.contains("1024 bytes") == true)
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("media/big.bin").path))
            #expect(temporaryFiles(in: root.appendingPathComponent("media")).isEmpty)
        }
    }

    @Test func expect100ContinueIsAnsweredBeforeTheBody() async throws {
        try await withServer { server, root in
            let port = server.port
            let (interim, final) = try await blocking {
                let socket = try RawSocket(port: port)
                defer { socket.close() }
                let head =
                    "PUT /media/c.bin HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
                _ = socket.send(head)
                let interim = String(decoding: socket.receive(until: "\r\n\r\n").bytes, as: UTF8.self)
                _ = socket.send("hello")
                return (interim, String(decoding: socket.receive(until: "}").bytes, as: UTF8.self))
            }
            #expect(interim.hasPrefix("HTTP/1.1 100 Continue\r\n"), "\(interim)")
            #expect(final.hasPrefix("HTTP/1.1 201"), "\(final)")
            #expect(try Data(contentsOf: root.appendingPathComponent("media/c.bin")) == Data("hello".utf8))
        }
    }

    @Test func twoUploadsToOneNameAtOnceLeaveOneWholeFile() async throws {
        try await withServer(maxUploadBytes: 8 << 20) { server, root in
            let first = Data(repeating: 1, count: 3 << 20)
            let second = Data(repeating: 2, count: 2 << 20)
            async let a = request(server, "media/same.bin", method: "PUT", body: first)
            async let b = request(server, "media/same.bin", method: "PUT", body: second)
            let statuses = try await [a.status, b.status]
            #expect(statuses == [201, 201])
            let stored = try Data(contentsOf: root.appendingPathComponent("media/same.bin"))
            #expect(stored == first || stored == second)
            #expect(temporaryFiles(in: root.appendingPathComponent("media")).isEmpty)
        }
    }
}
