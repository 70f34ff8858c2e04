import Foundation
import Hummingbird
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `GET /files/...` (and `HEAD`): files under `root/files`, with the ranges of RFC 9110 §14.
///
/// - `Accept-Ranges: bytes`, a strong `ETag` (size and modification time) and `Last-Modified` on every answer;
/// - one satisfiable range: 206 with `Content-Range`; several: 206 `multipart/byteranges` (up to
///   `maximumMultipartBytes` in all, else 200 with the whole file); none satisfiable: 416 with
///   `Content-Range: bytes */LENGTH`; an unknown unit or a malformed header: 200 with the whole file;
/// - `If-Range` that matches neither the `ETag` (strongly) nor the `Last-Modified` date exactly: 200.
struct FileRoutes {
    /// The most bytes a `multipart/byteranges` answer carries (it is built in memory); past this, the whole file
    /// is sent instead, as RFC 9110 allows.
    static let maximumMultipartBytes = 8 << 20
    /// Whole files are read in chunks of at most this size.
    static let chunkLength = 1 << 20

    let directory: URL
    let fileIO = FileIO()
    let cache = FileCache()

    func register(on router: Router<BasicRequestContext>, routes: RouteTable) {
        router.route("files/**", .get, routes: routes) { request, context in
            try await serve(request, context: context)
        }
    }

    /// A catch-all segment is safe when it is not empty, hidden, `..`, or carries a NUL.
    static func isSafe(_ segment: Substring) -> Bool {
        !segment.isEmpty && !segment.hasPrefix(".") && !segment.contains("\0") && !segment.contains("/")
    }

    private func serve(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let segments = context.parameters.getCatchAll()
        guard !segments.isEmpty, segments.allSatisfy(Self.isSafe) else {
            return .error(.notFound, "no such file")
        }
        let path = directory.path + "/" + segments.joined(separator: "/")
        guard let info = FileInfo(path: path) else { return .error(.notFound, "no such file") }
        var headers: HTTPFields = [
            .acceptRanges: "bytes", .eTag: info.entityTag, .lastModified: info.lastModified,
            .contentType: Self.mediaType(of: path),
        ]
        var range = request.headers[.range]
        if range != nil, let validator = request.headers[.ifRange],
            validator != info.entityTag && validator != info.lastModified
        {
            range = nil  // the client's copy is not this representation: send all of it
        }
        switch ByteRanges.evaluate(range, length: info.size) {
        case .whole:
            headers[.contentLength] = String(info.size)
            return Response(status: .ok, headers: headers, body: try await body(path, info, 0..<info.size, context))
        case .unsatisfiable:
            return .error(
                .rangeNotSatisfiable, "range not satisfiable: the file has \(info.size) bytes",
                headers: [.contentRange: "bytes */\(info.size)", .acceptRanges: "bytes", .eTag: info.entityTag])
        case .partial(let ranges) where ranges.count == 1:
            let only = ranges[0]
            headers[.contentRange] = "bytes \(only.lowerBound)-\(only.upperBound)/\(info.size)"
            headers[.contentLength] = String(only.count)
            let range = only.lowerBound..<(only.upperBound + 1)
            return Response(
                status: .partialContent, headers: headers, body: try await body(path, info, range, context))
        case .partial(let ranges):
            guard ranges.reduce(0, { $0 + $1.count }) <= Self.maximumMultipartBytes,
                let multipart = Self.multipart(path, ranges: ranges, size: info.size, type: headers[.contentType])
            else {
                headers[.contentLength] = String(info.size)
                return Response(
                    status: .ok, headers: headers, body: try await body(path, info, 0..<info.size, context))
            }
            headers[.contentType] = "multipart/byteranges; boundary=\(multipart.boundary)"
            headers[.contentLength] = String(multipart.body.readableBytes)
            return Response(status: .partialContent, headers: headers, body: .init(byteBuffer: multipart.body))
        }
    }

    /// The bytes `range` of the file: a slice of its cached contents when it is small, else read in chunks as
    /// they are sent.
    private func body(_ path: String, _ info: FileInfo, _ range: Range<Int>, _ context: BasicRequestContext)
        async throws -> ResponseBody
    {
        guard !range.isEmpty else { return ResponseBody() }
        if let contents = cache.contents(of: path, info),
            let slice = contents.getSlice(at: contents.readerIndex + range.lowerBound, length: range.count)
        {
            return ResponseBody(byteBuffer: slice)
        }
        do {
            return try await fileIO.loadFile(
                path: path, range: range.lowerBound...(range.upperBound - 1), context: context,
                chunkLength: Self.chunkLength)
        } catch {
            throw HTTPError(.notFound, message: "no such file")
        }
    }

    /// A `multipart/byteranges` body for `ranges`, or nil when the file cannot be read.
    static func multipart(_ path: String, ranges: [ClosedRange<Int>], size: Int, type: String?)
        -> (boundary: String, body: ByteBuffer)?
    {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let boundary = "jobkit-" + UUID().uuidString.lowercased()
        var body = ByteBuffer()
        for range in ranges {
            body.writeString("\r\n--\(boundary)\r\nContent-Type: \(type ?? "application/octet-stream")\r\n")
            body.writeString("Content-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(size)\r\n\r\n")
            guard (try? handle.seek(toOffset: UInt64(range.lowerBound))) != nil,
                let data = try? handle.read(upToCount: range.count), data.count == range.count
            else { return nil }
            body.writeBytes(data)
        }
        body.writeString("\r\n--\(boundary)--\r\n")
        return (boundary, body)
    }

    static func mediaType(of path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "application/octet-stream" }
        let ext = String(path[path.index(after: dot)...]).lowercased()
        return MediaType.getMediaType(forExtension: ext)?.description ?? "application/octet-stream"
    }
}
