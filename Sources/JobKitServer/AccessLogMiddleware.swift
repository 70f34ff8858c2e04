import Foundation
import Hummingbird
import JobKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes every request to an `AccessLog`.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let log: AccessLog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let range = request.headers[.range].map { $0.filter { !$0.isWhitespace } } ?? "-"
        let head = "\(request.method) \(request.uri.path) range=\(range)"
        do {
            let response = try await next(request, context)
            log.append("\(head) status=\(response.status.code)")
            return response
        } catch {
            log.append("\(head) status=error")
            throw error
        }
    }
}
