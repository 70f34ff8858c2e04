import Foundation
import Hummingbird
import JobKit
import NIOCore

/// `PUT /media/{name}` and `POST /media`: uploads streamed to disk, names confined to the media folder.
///
/// A body is written chunk by chunk, as it arrives, to a temporary file beside its destination
/// (`.upload-UUID.part`); when it is complete the file is synced and renamed over the destination in one step,
/// so a reader sees the old file or the new one, never a part. Past `maxBytes` the upload stops at once: 413
/// naming the limit, and the connection is closed rather than drained. A body that ends early or fails is 400.
/// Either way the temporary file is removed.
struct MediaRoutes {
    let directory: URL
    let maxBytes: Int

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("media/:name", .put, routes: routes) { request, context in
            let name = try context.parameters.require("name")
            guard Self.isValid(name) else {
                return .error(.badRequest, "invalid media name: use letters, digits, '.', '-', '_'")
            }
            return await store(request, as: name)
        }
        router.route("media", .post, routes: routes) { request, _ in
            await store(request, as: UUID().uuidString.lowercased())
        }
    }

    /// A name is one path component of safe characters: no `..`, no `/`, no leading dot.
    static func isValid(_ name: String) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        return (1...128).contains(name.count) && !name.hasPrefix(".") && name.allSatisfy(allowed.contains)
    }

    /// Removes temporary upload files a killed server left behind (only names this code creates).
    static func removeAbandonedUploads(in directory: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix(UploadFile.temporaryPrefix) && name.hasSuffix(".part") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    private func store(_ request: Request, as name: String) async -> Response {
        let tooLarge = Response.error(
            .contentTooLarge, "upload larger than the limit of \(maxBytes) bytes", headers: [.connection: "close"])
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > maxBytes { return tooLarge }
        let destination = directory.appendingPathComponent(name)
        do throws(UploadFile.Failure) {
            let size = try await UploadFile.receive(
                request.body, to: destination, maxBytes: maxBytes, expectedBytes: declared)
            return (try? Response.json(StoredMedia(id: name, size: size), status: .created))
                ?? .error(.internalServerError, "cannot encode the answer")
        } catch {
            switch error {
            case .tooLarge:
                return tooLarge
            case .truncated(let received, let expected):
                return .error(.badRequest, "the body ended after \(received) of \(expected) bytes")
            case .body(let reason):
                return .error(.badRequest, "cannot read the body: \(reason)")
            case .disk(let operation, let code):
                let reason = LoopbackServerError.systemReason(code)
                return .error(.internalServerError, "cannot store \(name): \(operation): \(reason)")
            }
        }
    }
}
