import Hummingbird
import JobKit
import NIOCore
import NIOHTTPTypes

/// The server's paths and the methods each accepts, so that a request no route takes is told why:
/// 404 for an unknown path, 405 with `Allow` for a known path and another method.
final class RouteTable: Sendable {
    private struct Entry: Sendable {
        var segments: [Substring]
        var methods: [HTTPRequest.Method]
    }

    private let entries = LockedBox<[Entry]>.make([])

    /// Records that `path` (Hummingbird syntax: `:name` one segment, `**` the rest) takes `method`;
    /// `GET` brings `HEAD`, as the router does.
    func record(_ path: String, _ method: HTTPRequest.Method) {
        let segments = path.split(separator: "/")
        let methods: [HTTPRequest.Method] = method == .get ? [.get, .head] : [method]
        entries.withLock { entries in
            if let index = entries.firstIndex(where: { $0.segments == segments }) {
                entries[index].methods += methods.filter { !entries[index].methods.contains($0) }
            } else {
                entries.append(Entry(segments: segments, methods: methods))
            }
        }
    }

    /// The methods some route takes on `path`; empty when no route knows the path.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        return entries.withLock { entries in
            entries.filter { Self.matches($0.segments, segments) }.flatMap(\.methods)
        }
    }

    private static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        for (index, part) in pattern.enumerated() {
            if part == "**" { return path.count > index }
            guard index < path.count, part.hasPrefix(":") || part == path[index] else { return false }
        }
        return pattern.count == path.count
    }
}

extension Router {
    /// Adds a route and records it in `routes`.
    func route(
        _ path: String, _ method: HTTPRequest.Method, routes: RouteTable,
        use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) {
        routes.record(path, method)
        on(RouterPath(path), method: method, use: handler)
    }
}

/// The outermost middleware: every error becomes `{"error": "…"}` with its status, an unknown path 404 and a
/// wrong method 405 with `Allow`; nothing thrown by a route reaches the connection.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            if error.status == .notFound, error.body == nil {
                return noRoute(for: request)
            }
            return .error(error.status, error.body ?? error.status.reasonPhrase, headers: error.headers)
        } catch {
            return .error(.internalServerError, "internal error: \(type(of: error))")
        }
    }

    private func noRoute(for request: Request) -> Response {
        let path = String(request.uri.path.prefix(200))
        let allowed = routes.methods(for: request.uri.path)
        guard !allowed.isEmpty else { return .error(.notFound, "no such path: \(path)") }
        let list = allowed.map(\.rawValue).joined(separator: ", ")
        return .error(
            .methodNotAllowed, "\(request.method.rawValue.prefix(20)) is not allowed on \(path); allowed: \(list)",
            headers: [.allow: list])
    }
}

/// The connection-level rules no route can apply, between the HTTP codec and Hummingbird:
/// - `Expect: 100-continue` is answered with an interim `100 Continue` before the request reaches its route,
///   so a client waiting for it (curl waits a second) sends its body at once;
/// - a response with `Connection: close` (413 for an upload past the limit) closes the connection once it is
///   written, instead of Hummingbird reading the rest of the refused body;
/// - the bare 400 Hummingbird writes for a request it cannot parse gets the `{"error": "…"}` body of every
///   other error.
final class ConnectionRulesHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private static let parseErrorBody = ByteBuffer(string: #"{"error":"malformed HTTP request"}"#)

    /// The response being written says `Connection: close`.
    private var closesAfterResponse = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data), let expect = head.headerFields[.expect],
            expect.lowercased() == "100-continue"
        {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            closesAfterResponse = head.headerFields[.connection]?.lowercased() == "close"
            if head.status == .badRequest, head.headerFields[.contentLength] == "0", closesAfterResponse {
                // Hummingbird's answer to a parse error: give it the body every other error has.
                head.headerFields[.contentLength] = String(Self.parseErrorBody.readableBytes)
                head.headerFields[.contentType] = "application/json"
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.write(wrapOutboundOut(.body(Self.parseErrorBody)), promise: promise)
            } else {
                context.write(data, promise: promise)
            }
        case .end where closesAfterResponse:
            closesAfterResponse = false
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in boundContext.value.close(promise: nil) }
        case .body, .end:
            context.write(data, promise: promise)
        }
    }
}
