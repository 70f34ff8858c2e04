import Foundation
import JobKitTracing
import Tracing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The span of one HTTP request of a traced download: a `client` span named after the method,
/// a child of the run's span, from the request's start to the end of its body.
///
/// Made only inside a traced run: the context is the one a `SpanTracer` gave the download's body
/// (`ServiceContext.current` there), and the span comes from the tracer that made the run's span.
/// The request carries the span's context in its headers (W3C `traceparent` with swift-otel), so a
/// traced server continues the trace. Attributes as OpenTelemetry's HTTP client conventions name
/// them: `http.request.method`, `url.full` (without a user or password, signatures redacted), `server.address`,
/// `server.port`, `http.response.status_code`; a status of 400 or more, or a transport failure,
/// is the span's error.
///
/// JobKit makes this span itself, for both transports: AsyncHTTPClient 1.37 starts its own request
/// span for the callback API JobKit uses on an event loop, where no context is current — a root
/// span of a trace of its own (the client a `DownloadManager` makes has AsyncHTTPClient's tracing
/// off for that reason).
struct RequestSpan {
    private let span: any Span

    /// Starts the span of `request` when `context` is a traced run's, and adds its context to the
    /// request's headers; nil (and nothing done) otherwise.
    static func start(_ request: inout URLRequest, in context: ServiceContext?) -> RequestSpan? {
        guard let context, let tracer = context.jobTracer else { return nil }
        let method = request.httpMethod ?? "GET"
        let span = tracer.startSpan(method, context: context, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method
            if let url = request.url {
                attributes["url.full"] = url.redactedString
                if let host = url.host { attributes["server.address"] = host }
                if let port = url.port ?? (url.scheme == "https" ? 443 : url.scheme == "http" ? 80 : nil) {
                    attributes["server.port"] = port
                }
            }
        }
        tracer.inject(span.context, into: &request, using: URLRequestInjector())
        return RequestSpan(span: span)
    }

    /// Ends the span with the request's response and error.
    func end(_ response: URLResponse?, _ error: (any Error)?) {
        if let status = (response as? HTTPURLResponse)?.statusCode {
            span.attributes["http.response.status_code"] = status
            if status >= 400 { span.setStatus(SpanStatus(code: .error, message: "HTTP \(status)")) }
        }
        if let error {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        }
        span.end()
    }
}

/// Writes a span's context into a request's headers.
private struct URLRequestInjector: Injector {
    func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
        request.setValue(value, forHTTPHeaderField: key)
    }
}
