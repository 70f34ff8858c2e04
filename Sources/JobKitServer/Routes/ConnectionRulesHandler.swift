import Hummingbird
import JobKit
import NIOCore
import NIOHTTPTypes

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
