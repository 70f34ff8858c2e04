import Hummingbird
import JobKit
import NIOCore
import NIOHTTPTypes

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
