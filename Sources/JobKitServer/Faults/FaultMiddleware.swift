import Foundation
import Hummingbird
import JobKit
import NIOCore

/// Applies a `FaultController`'s decisions before the routes see a request.
struct FaultMiddleware<Context: RequestContext>: RouterMiddleware {
    let faults: FaultController

    struct DroppedConnection: Error {}

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let (latency, decision) = faults.decide(for: request)
        if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
        switch decision {
        case .pass:
            return try await next(request, context)
        case .reject(let message):
            return Response.error(.badRequest, message)
        case .fail(let status, let retryAfter):
            var response = Response.error(.init(code: status), "injected failure")
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        case .drop:
            return Self.droppedAnswer
        case .dropAnswer:
            _ = try? await next(request, context)  // an error answer is lost as well
            return Self.droppedAnswer
        }
    }

    /// Promises more bytes than it sends, then fails the body: the connection closes mid-response.
    private static var droppedAnswer: Response {
        Response(
            status: .ok, headers: [.contentLength: "1000"],
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "partial"))
                throw DroppedConnection()
            })
    }
}
