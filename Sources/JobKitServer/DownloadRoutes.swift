import Foundation
import Hummingbird
import NIOCore

/// `GET /downloads/{name}?chunk-ms=N`: an uploaded file (under `media/`), streamed in 32 KiB chunks with `N` ms
/// between them — a slow download whose progress can be watched on loopback.
struct DownloadRoutes {
    static let chunkSize = 32 * 1024

    let directory: URL

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("downloads/:name", .get, routes: routes) { request, context in
            let name = try context.parameters.require("name")
            let file = directory.appendingPathComponent(name)
            guard MediaRoutes.isValid(name), let data = try? Data(contentsOf: file) else {
                return Response.error(.notFound, "no such file")
            }
            let pause = max(0, min(request.uri.queryParameters.get("chunk-ms", as: Int.self) ?? 0, 10_000))
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: data.count) { writer in
                    var offset = 0
                    while offset < data.count {
                        let end = min(offset + Self.chunkSize, data.count)
                        try await writer.write(ByteBuffer(bytes: data[offset..<end]))
                        offset = end
                        if pause > 0, offset < data.count { try await Task.sleep(for: .milliseconds(pause)) }
                    }
                    try await writer.finish(nil)
                })
        }
    }
}
