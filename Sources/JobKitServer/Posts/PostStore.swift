import Foundation
import Hummingbird
import JobKit
import NIOCore

/// Posts kept in an append-only log of JSON lines (`posts.jsonl`), one post per line.
///
/// Each post costs one `write` and one `fsync` of its own line, whatever the number before it, and is
/// acknowledged only after both: every acknowledged post survives `kill -9` or a power cut. A last line
/// without its newline (a write the process did not finish) was never acknowledged: it is cut off when
/// the log is opened. Any other line that is not a post makes `open` throw `.corruptPosts`, naming the line.
///
/// A post made with an `Idempotency-Key` keeps the key in its line, and the store remembers the keys of its
/// latest `IdempotencyKeys.defaultCapacity` such posts (also across restarts): a post request with a key it
/// remembers gets that key's post again instead of a new one.
///
/// Why a log and not SQLite: one writer appending whole lines needs nothing a database adds, and it keeps
/// the server free of a C library that CI would have to install.
actor PostStore {
    private let path: String
    private let descriptor: Int32
    private let mediaDirectory: URL
    private var posts: [Post]
    /// The log's length: a failed append is cut back to it, so the log never keeps half a line.
    private var length: Int
    /// The largest id so far (0 before the first post); the next post gets the one after it.
    private var largestID: Int
    /// The keys of the latest posts made with one, each with its post's index in `posts`.
    private var keys: IdempotencyKeys

    private init(
        path: String, descriptor: Int32, mediaDirectory: URL, entries: [PostLog.Entry], length: Int, keyCapacity: Int
    ) {
        self.path = path
        self.descriptor = descriptor
        self.mediaDirectory = mediaDirectory
        self.posts = entries.map(\.post)
        self.length = length
        self.largestID = posts.map(\.id).max() ?? 0
        var keys = IdempotencyKeys(capacity: keyCapacity)
        for (index, entry) in entries.enumerated() {
            // A key the server would not have taken (a log edited by hand) is not remembered.
            if let key = entry.idempotencyKey.flatMap(IdempotencyKey.init(stored:)) { keys.remember(key, post: index) }
        }
        self.keys = keys
    }

    deinit {
        close(descriptor)
    }

    /// Opens (or creates) the log at `log`; a `legacy` JSON array from earlier versions is imported once. The
    /// store remembers the idempotency keys of its latest `keyCapacity` posts made with one.
    static func load(
        log: URL, legacy: URL, media: URL, keyCapacity: Int = IdempotencyKeys.defaultCapacity
    ) throws -> PostStore {
        let manager = FileManager.default
        if !manager.fileExists(atPath: log.path), manager.fileExists(atPath: legacy.path) {
            try importLegacy(legacy, into: log)
        }
        let descriptor = open(log.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw LoopbackServerError.cannotOpenRoot(path: log.path, reason: LoopbackServerError.systemReason(errno))
        }
        do {
            let data = try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).readToEnd() ?? Data()
            let (entries, complete) = try PostLog.decode(data, path: log.path)
            if complete < data.count {
                // A torn last line: the process died inside a write, before the post was acknowledged.
                guard ftruncate(descriptor, off_t(complete)) == 0, fsync(descriptor) == 0 else {
                    throw LoopbackServerError.cannotOpenRoot(
                        path: log.path, reason: LoopbackServerError.systemReason(errno))
                }
            }
            guard lseek(descriptor, off_t(complete), SEEK_SET) >= 0 else {
                throw LoopbackServerError.cannotOpenRoot(
                    path: log.path, reason: LoopbackServerError.systemReason(errno))
            }
            return PostStore(
                path: log.path, descriptor: descriptor, mediaDirectory: media, entries: entries, length: complete,
                keyCapacity: keyCapacity)
        } catch {
            close(descriptor)
            throw error
        }
    }

    private static func importLegacy(_ legacy: URL, into log: URL) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let posts = try? decoder.decode([Post].self, from: Data(contentsOf: legacy)) else {
            throw LoopbackServerError.corruptPosts(path: legacy.path, line: 1)
        }
        var data = Data()
        for post in posts { data += try PostLog.line(for: PostLog.Entry(post: post)) }
        do {
            try data.write(to: log, options: .atomic)
        } catch {
            throw LoopbackServerError.cannotOpenRoot(path: log.path, reason: fileReason(error))
        }
    }

    enum CreateError: Error, Equatable {
        case unknownMedia([String])
        case disk(String)
        /// The key made the post `postID`, whose text or media differ from the new one's.
        case keyReused(postID: Int)
    }

    /// Creates the post and appends it to the log; with a `key` that made a post already, gives that post
    /// again instead (or throws `.keyReused` when the new post's text or media differ from it).
    ///
    /// Looking the key up and creating the post are one step of the actor, so two requests with the same key
    /// never both create a post, however they interleave: the later one gets the earlier one's post.
    func create(_ new: NewPost, key: IdempotencyKey? = nil) throws(CreateError) -> Post {
        if let key, let index = keys.post(for: key) {
            let made = posts[index]
            guard made.text == new.text, made.mediaIDs == new.mediaIDs else { throw .keyReused(postID: made.id) }
            return made
        }
        let unknown = new.mediaIDs.filter { id in
            !MediaRoutes.isValid(id)
                || !FileManager.default.fileExists(atPath: mediaDirectory.appendingPathComponent(id).path)
        }
        guard unknown.isEmpty else { throw .unknownMedia(unknown) }
        // The next id follows the largest so far; a log (edited by hand) that already holds `Int.max` is full.
        let (id, full) = largestID.addingReportingOverflow(1)
        guard !full else { throw .disk("cannot add a post to \(path): its ids are exhausted") }
        let post = Post(id: id, text: new.text, mediaIDs: new.mediaIDs, createdAt: Date())
        guard let line = try? PostLog.line(for: PostLog.Entry(post: post, idempotencyKey: key?.value)) else {
            throw .disk("cannot encode the post")
        }
        let failure =
            line.withUnsafeBytes { POSIXFile.writeAll($0, to: descriptor) } ?? (fsync(descriptor) == 0 ? nil : errno)
        if let failure {
            // Cut the log back to its last whole line, so that a later post is not glued to half of this one.
            _ = ftruncate(descriptor, off_t(length))
            _ = lseek(descriptor, off_t(length), SEEK_SET)
            throw .disk("cannot append to \(path): \(LoopbackServerError.systemReason(failure))")
        }
        length += line.count
        largestID = id
        posts.append(post)
        if let key { keys.remember(key, post: posts.count - 1) }
        return post
    }

    func all() -> [Post] {
        posts
    }

    /// The post with `id`, if any (a log edited by hand may be in any order, so it is searched).
    func post(id: Int) -> Post? {
        posts.last { $0.id == id }
    }
}
