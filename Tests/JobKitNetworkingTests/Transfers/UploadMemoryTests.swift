import Foundation
import JobKit
import JobKitNetworking
import JobKitTestSupport
import JobKitTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads stream from disk: memory stays bounded whatever the file's size.
@Suite struct UploadMemoryTests {
    /// The peak resident set of this process since the last reset, in bytes (Linux).
    static func peakResident() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status")))
    func aLargeFileUploadStreamsFromDiskWithBoundedMemory() async {
        // In a child process of its own, so that the peak resident set is this upload's alone and
        // not that of the tests running beside it.
        await #expect(processExitsWith: .success) {
            let server = try ScriptedServer { request, _ in .respond(201, body: Data("\(request.bodyLength)".utf8)) }
            defer { server.stop() }
            let file = try scratchFolder().appendingPathComponent("big.bin")
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let size = 200 * 1024 * 1024
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            try handle.truncate(atOffset: UInt64(size))
            try handle.close()
            let before = UploadMemoryTests.peakResident() ?? 0

            let reply = try await Job<HTTPReply>.upload(file: file, to: server.url("upload")).value

            let grew = (UploadMemoryTests.peakResident() ?? .max) - before
            // Reading the file whole would add 200 MiB (plus as much shadow under the thread sanitizer).
            let bound = (isThreadSanitized ? 160 : 64) * 1024 * 1024
            guard String(decoding: reply.body, as: UTF8.self) == "\(size)", grew < bound else {
                FileHandle.standardError.write(Data("peak grew by \(grew >> 20) MiB\n".utf8))
                exit(1)
            }
        }
    }
}

/// Whether this process runs under the thread sanitizer, whose shadow memory inflates resident-set
/// measurements: memory bounds are looser there, never absent.
let isThreadSanitized: Bool = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
