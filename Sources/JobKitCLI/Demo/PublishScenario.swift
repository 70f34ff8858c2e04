import Foundation
import JobKit
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Seed 000 over HTTP: upload every photo and video in parallel, then create the post with their
/// ids — never the post after a failed upload (checked by asking the server).
struct PublishScenario: Sendable {
    var photos: Int
    var videos: Int
    var failUpload: Bool

    struct CreatedPost: Decodable, Sendable {
        var id: Int
        var text: String
        var mediaIDs: [String]
    }

    /// Returns whether the outcome was the expected one: published, or — with `failUpload` — not.
    @MainActor
    func run(on backend: DemoBackend) async -> Bool {
        let text = "JobKit demo post \(UUID().uuidString.prefix(8))"
        var media = (1..<photos + 1).map { "photo-\($0).jpg" } + (1..<videos + 1).map { "video-\($0).mov" }
        // The server refuses names with spaces and brackets (400): a real, server-side upload failure.
        if failUpload, !media.isEmpty { media[media.count - 1] = "video (corrupt).mov" }
        backend.print("publish: uploading \(media.count) media in parallel, then the post")
        let uploads = media.enumerated().map { index, name in upload(name, seed: index, on: backend) }
        let publish = backend.traced(
            Job.collect(uploads, maxConcurrent: 4).then { ids in createPost(text, mediaIDs: ids, on: backend) },
            "publish")
        let outcome = await PublishScreen(backend: backend).publish(publish)
        let onServer = await backend.outcome(
            of: Job<[CreatedPost]>.decode(
                for: URLRequest(url: backend.url("posts")), client: backend.client))
        let isOnServer = (try? onServer.get())?.contains { $0.text == text } ?? false
        backend.print("publish: the server \(isOnServer ? "has" : "does not have") the post")
        let published = (try? outcome.get()) != nil
        return isOnServer == !failUpload && published == !failUpload
    }

    private func upload(_ name: String, seed: Int, on backend: DemoBackend) -> Job<String> {
        let path = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
        let data = DemoBackend.bytes(count: 64 * 1024 * (1 + seed % 3), seed: seed)
        let job = Job<HTTPReply>.upload(data: data, to: backend.url("media/\(path)"), client: backend.client)
            .map { _ in
                DispatchQueue.main.async { backend.print("  ✓ \(name)") }
                return name
            }
            .mapError { error in
                DispatchQueue.main.async { backend.print("  ✗ \(name): \(error)") }
                return error
            }
        return backend.traced(job, "upload \(name)")
    }

    private func createPost(_ text: String, mediaIDs: [String], on backend: DemoBackend) -> Job<CreatedPost> {
        var request = URLRequest(url: backend.url("posts"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: ["text": text, "mediaIDs": mediaIDs])
        return backend.traced(Job<CreatedPost>.decode(for: request, client: backend.client), "create post")
    }
}

/// Seed 000's screen: a main-actor class that publishes a post and shows how it went, touching its own
/// state in the job's handler as written.
@MainActor
final class PublishScreen {
    private let backend: DemoBackend
    /// What the screen shows.
    private(set) var status = "not published"

    init(backend: DemoBackend) {
        self.backend = backend
    }

    /// Performs `publish`, shows its outcome, and returns it.
    func publish(_ publish: Job<PublishScenario.CreatedPost>) async -> Result<PublishScenario.CreatedPost, any Error> {
        status = "publishing"
        return await withCheckedContinuation { continuation in
            publish.perform { result in
                switch result {
                case .success(let post): self.status = "post \(post.id) published with \(post.mediaIDs.count) media"
                case .failure(let error): self.status = "\(error) — the post was NOT published"
                }
                self.backend.print("publish: \(self.status)")
                continuation.resume(returning: result)
            }
        }
    }
}
