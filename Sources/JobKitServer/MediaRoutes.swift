import Foundation
import Hummingbird
import NIOCore

/// `PUT /media/{name}` and `POST /media`: uploads stored on disk, names confined to the media folder.
struct MediaRoutes {
    let directory: URL
    let maxBytes: Int

    func register(on router: Router<BasicRequestContext>) {
        router.put("media/:name") { request, context in
            let name = try context.parameters.require("name")
            guard Self.isValid(name) else {
                return try Response.error(.badRequest, "invalid media name: use letters, digits, '.', '-', '_'")
            }
            return try await store(request, as: name)
        }
        router.post("media") { request, _ in
            try await store(request, as: UUID().uuidString.lowercased())
        }
    }

    /// A name is one path component of safe characters: no `..`, no `/`, no leading dot.
    static func isValid(_ name: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        return (1...128).contains(name.count) && !name.hasPrefix(".") && name.allSatisfy(allowed.contains)
    }

    private func store(_ request: Request, as name: String) async throws -> Response {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maxBytes)
        } catch {
            return try Response.error(.contentTooLarge, "upload larger than \(maxBytes) bytes")
        }
        let destination = directory.appendingPathComponent(name)
        try Data(buffer: body).write(to: destination, options: .atomic)
        return try Response.json(StoredMedia(id: name, size: body.readableBytes), status: .created)
    }
}
