import Foundation
import Hummingbird
import JobKit
import NIOCore

/// `POST /posts` (JSON only: 415 otherwise; 413 past the limit; 422 when a media id is unknown), `GET /posts` and
/// `GET /posts/{id}` (404 for an id that is not a post's).
///
/// `POST /posts` takes an `Idempotency-Key` (`draft-ietf-httpapi-idempotency-key-header`): a request whose key
/// made a post already is answered as the first one was — 201 and that post — without making another; the
/// same key with a different text or media is 422; a key that is not valid (`IdempotencyKey`) is 400. The
/// draft's 409, for a key whose first request is still being processed, never happens here: the store checks
/// the key and creates the post in one step, so a concurrent request with the key waits and gets the post.
struct PostRoutes {
    let store: PostStore
    let maxBytes: Int

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("posts", .post, routes: routes) { request, _ in
            await create(request)
        }
        router.route("posts", .get, routes: routes) { _, _ in
            try Response.json(await store.all())
        }
        router.route("posts/:id", .get, routes: routes) { _, context in
            guard let id = context.parameters.get("id", as: Int.self), let post = await store.post(id: id) else {
                return .error(.notFound, "no such post")
            }
            return try Response.json(post)
        }
    }

    /// Whether `contentType` is JSON: `application/json` or a `+json` type, with any parameters.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces().lowercased() } ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    private func create(_ request: Request) async -> Response {
        guard Self.isJSON(request.headers[.contentType]) else {
            let given = request.headers[.contentType].map { "'\($0.prefix(60))'" } ?? "none"
            return .error(.unsupportedMediaType, "a post must be application/json; Content-Type was \(given)")
        }
        let key: IdempotencyKey?
        switch IdempotencyKey.parse(request.headers) {
        case .success(let parsed): key = parsed
        case .failure(let invalid): return .error(.badRequest, invalid.message)
        }
        let tooLarge = Response.error(
            .contentTooLarge, "a post may have at most \(maxBytes) bytes", headers: [.connection: "close"])
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBytes {
            return tooLarge
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maxBytes)
        } catch is NIOTooManyBytesError {
            return tooLarge
        } catch {
            return .error(.badRequest, "cannot read the body")
        }
        let decoder = JSONDecoder()
        guard let new = try? decoder.decode(NewPost.self, from: Data(buffer: body)) else {
            return .error(.badRequest, "expected {\"text\": String, \"mediaIDs\": [String]}")
        }
        let post: Post
        do throws(PostStore.CreateError) {
            post = try await store.create(new, key: key)
        } catch {
            switch error {
            case .unknownMedia(let ids):
                return .error(.unprocessableContent, "unknown media: \(ids.joined(separator: ", "))")
            case .disk(let message):
                return .error(.internalServerError, message)
            case .keyReused(let id):
                return .error(
                    .unprocessableContent,
                    "this Idempotency-Key made post \(id), whose text or media differ; use a new key for a new post")
            }
        }
        return (try? Response.json(post, status: .created)) ?? .error(.internalServerError, "cannot encode the post")
    }
}
