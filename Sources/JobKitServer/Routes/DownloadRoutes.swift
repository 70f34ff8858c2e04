import Foundation
import Hummingbird
import NIOCore

/// `GET /downloads/{name}?chunk-ms=N`: an uploaded file (under `media/`), streamed in 32 KiB chunks with `N` ms
/// (at most 10,000) between them — a slow download whose progress can be watched on loopback. The file is read
/// one chunk at a time, never whole.
struct DownloadRoutes {
    static let chunkSize = 32 * 1024

    let directory: URL

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("downloads/:name", .get, routes: routes) { request, context in
            let name = try context.parameters.require("name")
            let file = directory.appendingPathComponent(name)
            guard MediaRoutes.isValid(name), let info = FileInfo(path: file.path),
                let handle = try? FileHandle(forReadingFrom: file)
            else {
                return Response.error(.notFound, "no such file")
            }
            let pause = max(0, min(request.uri.queryParameters.get("chunk-ms", as: Int.self) ?? 0, 10_000))
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody(contentLength: info.size) { writer in
                    defer { try? handle.close() }
                    var sent = 0
                    while sent < info.size {
                        let data = try handle.read(upToCount: min(Self.chunkSize, info.size - sent)) ?? Data()
                        if data.isEmpty { break }  // the file shrank: the connection ends short
                        try await writer.write(ByteBuffer(bytes: data))
                        sent += data.count
                        if pause > 0, sent < info.size { try await Task.sleep(for: .milliseconds(pause)) }
                    }
                    try await writer.finish(nil)
                })
        }
    }
}
