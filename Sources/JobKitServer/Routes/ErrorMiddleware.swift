import Hummingbird
import JobKit
import NIOCore
import NIOHTTPTypes

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
