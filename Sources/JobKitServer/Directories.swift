import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The folders and files under the root.
struct Directories {
    let files: URL
    let media: URL
    let posts: URL
    /// Where earlier versions kept posts, as one JSON array; imported into `posts` once.
    let legacyPosts: URL

    init(root: URL) throws {
        files = root.appendingPathComponent("files", isDirectory: true)
        media = root.appendingPathComponent("media", isDirectory: true)
        posts = root.appendingPathComponent("posts.jsonl")
        legacyPosts = root.appendingPathComponent("posts.json")
        for directory in [files, media] {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw LoopbackServerError.cannotOpenRoot(path: root.path, reason: fileReason(error))
            }
        }
    }
}

/// The system's reason inside a Foundation file error, without the `NSError` dump.
func fileReason(_ error: any Error) -> String {
    let nsError = error as NSError
    if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return LoopbackServerError.systemReason(Int32(underlying.code))
    }
    if nsError.domain == NSPOSIXErrorDomain { return LoopbackServerError.systemReason(Int32(nsError.code)) }
    switch CocoaError.Code(rawValue: nsError.code) {
    case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or directory"
    case .fileWriteNoPermission, .fileReadNoPermission: return "permission denied"
    case .fileWriteFileExists: return "a file is in the way"
    case .fileWriteOutOfSpace: return "no space left on device"
    default: return nsError.localizedDescription
    }
}
