import Foundation
import Hummingbird

/// Posts kept on disk: every change is written (atomically) before it is acknowledged.
actor PostStore {
    private let file: URL
    private let mediaDirectory: URL
    private var posts: [Post]

    init(file: URL, mediaDirectory: URL) throws {
        self.file = file
        self.mediaDirectory = mediaDirectory
        if FileManager.default.fileExists(atPath: file.path) {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            posts = try decoder.decode([Post].self, from: Data(contentsOf: file))
        } else {
            posts = []
        }
    }

    enum CreateError: Error {
        case unknownMedia([String])
    }

    func create(_ new: NewPost) throws -> Post {
        let unknown = new.mediaIDs.filter { id in
            !MediaRoutes.isValid(id)
                || !FileManager.default.fileExists(atPath: mediaDirectory.appendingPathComponent(id).path)
        }
        guard unknown.isEmpty else { throw CreateError.unknownMedia(unknown) }
        let post = Post(id: (posts.map(\.id).max() ?? 0) + 1, text: new.text, mediaIDs: new.mediaIDs, createdAt: Date())
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try encoder.encode(posts + [post]).write(to: file, options: .atomic)
        posts.append(post)
        return post
    }

    func all() -> [Post] {
        posts
    }
}

/// `POST /posts` (422 when a media id is unknown) and `GET /posts`.
struct PostRoutes {
    let store: PostStore

    func register(on router: Router<BasicRequestContext>) {
        router.post("posts") { request, context in
            let new: NewPost
            do {
                new = try await request.decode(as: NewPost.self, context: context)
            } catch {
                return try Response.error(.badRequest, "expected {\"text\": String, \"mediaIDs\": [String]}")
            }
            do {
                return try Response.json(try await store.create(new), status: .created)
            } catch PostStore.CreateError.unknownMedia(let ids) {
                return try Response.error(.unprocessableContent, "unknown media: \(ids.joined(separator: ", "))")
            }
        }
        router.get("posts") { _, _ in
            try Response.json(await store.all())
        }
    }
}
