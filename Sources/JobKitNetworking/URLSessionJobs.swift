import Dispatch
import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == HTTPResponse {
    /// Loads `request` with `session`'s configuration; a non-2xx status fails with `HTTPStatusError`.
    ///
    /// Download progress is reported through the controller; cancelling the run cancels the
    /// `URLSessionTask`.
    ///
    /// ```swift
    /// let feed = try await Job.data(for: URLRequest(url: feedURL)).value.body
    /// ```
    public static func data(for request: URLRequest, session: URLSession = .shared) -> Job<HTTPResponse> {
        Job { controller in
            let (transfers, delegate) = TransferSessions.session(for: session)
            controller.start(
                transfers.dataTask(with: request), handler: .collecting(into: controller), on: delegate)
        }
    }

    /// Uploads `data` with `method` (default PUT); send progress is reported through the controller.
    public static func upload(
        data: Data, to url: URL, method: String = "PUT", contentType: String = "application/octet-stream",
        session: URLSession = .shared
    ) -> Job<HTTPResponse> {
        Job { controller in
            controller.upload(data, to: url, method: method, contentType: contentType, session: session)
        }
    }

    /// Uploads the file at `file`; it is read when the run starts.
    public static func upload(
        file: URL, to url: URL, method: String = "PUT", contentType: String = "application/octet-stream",
        session: URLSession = .shared
    ) -> Job<HTTPResponse> {
        Job { controller in
            do {
                let data = try Data(contentsOf: file)
                controller.upload(data, to: url, method: method, contentType: contentType, session: session)
            } catch {
                controller.fail(with: error)
            }
        }
    }
}

extension Job {
    /// Loads `request` and decodes its JSON body as `Value`; a decoding error names the failing field
    /// (`DecodingFailure.path`).
    public static func decode(
        _ type: Value.Type = Value.self, for request: URLRequest, session: URLSession = .shared,
        decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) -> Job<Value> where Value: Decodable {
        Job<HTTPResponse>.data(for: request, session: session).map { response in
            do {
                return try decoder().decode(Value.self, from: response.body)
            } catch {
                throw DecodingFailure(error, decoding: Value.self)
            }
        }
    }
}

extension Job.Controller where Value == HTTPResponse {
    /// Uploads `data` and completes the run with the response.
    fileprivate func upload(_ data: Data, to url: URL, method: String, contentType: String, session: URLSession) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        let (transfers, delegate) = TransferSessions.session(for: session)
        let handler = TransferHandler.collecting(into: self, reportsReceiving: false)
        handler.onSent = { sent, expected in
            if expected > 0 { report(progress: Double(sent) / Double(expected)) }
        }
        start(transfers.uploadTask(with: request, from: data), handler: handler, on: delegate)
    }
}

extension TransferHandler {
    /// Collects the body in memory and completes `controller` with the validated response.
    static func collecting(
        into controller: Job<HTTPResponse>.Controller, reportsReceiving: Bool = true
    ) -> TransferHandler {
        let handler = TransferHandler()
        var body = Data()
        var expected: Int64 = -1
        handler.onResponse = { expected = $0.expectedContentLength }
        handler.onData = { data in
            body.append(data)
            if reportsReceiving, expected > 0 { controller.report(progress: Double(body.count) / Double(expected)) }
        }
        handler.onComplete = { response, error in controller.complete(with: validated(body, response, error)) }
        return handler
    }
}

/// Turns a transfer's end into a result: transport errors as they are, non-2xx statuses as
/// `HTTPStatusError`.
func validated(_ data: Data, _ response: URLResponse?, _ error: (any Error)?) -> Result<HTTPResponse, any Error> {
    if let error { return .failure(error) }
    guard let http = response as? HTTPURLResponse else { return .failure(URLError(.badServerResponse)) }
    let response = HTTPResponse(http, body: data)
    return (200..<300).contains(response.status) ? .success(response) : .failure(HTTPStatusError(response))
}
