import Dispatch
import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == HTTPReply {
    /// Loads `request` through `client`; a non-2xx status fails with `HTTPStatusError`, a transport
    /// failure with `TransportError`.
    ///
    /// Download progress is reported through the controller; cancelling the run cancels the
    /// `URLSessionTask`. The body is kept in memory: use
    /// `download(from:to:transport:blindResume:durability:)` for files. The run completes on the
    /// queue it was performed on, so `map`, `then` and `decode` closures run there — never on the
    /// client's delegate queue.
    ///
    /// ```swift
    /// let feed = try await Job.data(for: URLRequest(url: feedURL)).value.body
    /// ```
    public static func data(for request: URLRequest, client: TransferClient = .shared) -> Job<HTTPReply> {
        Job { controller in
            client.start(
                client.session.dataTask(with: request), handler: .collecting(into: controller, url: request.url),
                for: controller)
        }
    }

    /// Uploads `data` with `method` (default PUT); send progress is reported through the controller.
    /// Completes on the queue the run was performed on.
    public static func upload(
        data: Data, to url: URL, method: String = "PUT", contentType: String = "application/octet-stream",
        client: TransferClient = .shared
    ) -> Job<HTTPReply> {
        Job { controller in
            let request = URLRequest(upload: url, method: method, contentType: contentType)
            controller.upload(client.session.uploadTask(with: request, from: data), url: url, client: client)
        }
    }

    /// Uploads the file at `file`, streamed from disk in small chunks: memory stays bounded whatever
    /// the file's size. A file that cannot be read fails the run before anything is sent. Completes on
    /// the queue the run was performed on.
    public static func upload(
        file: URL, to url: URL, method: String = "PUT", contentType: String = "application/octet-stream",
        client: TransferClient = .shared
    ) -> Job<HTTPReply> {
        Job { controller in
            guard FileManager.default.isReadableFile(atPath: file.path) else {
                return controller.fail(with: FileReadError(path: file.path))
            }
            let request = URLRequest(upload: url, method: method, contentType: contentType)
            controller.upload(client.session.uploadTask(with: request, fromFile: file), url: url, client: client)
        }
    }
}

extension Job {
    /// Loads `request` and decodes its JSON body as `Value`; a decoding error names the failing field
    /// (`BodyDecodingError.path`). Decoding runs on the queue the run was performed on.
    public static func decode(
        _ type: Value.Type = Value.self, for request: URLRequest, client: TransferClient = .shared,
        decoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) -> Job<Value> where Value: Decodable {
        Job<HTTPReply>.data(for: request, client: client).map { response in
            do {
                return try decoder().decode(Value.self, from: response.body)
            } catch {
                throw BodyDecodingError(error, decoding: Value.self)
            }
        }
    }
}

extension URLRequest {
    fileprivate init(upload url: URL, method: String, contentType: String) {
        self.init(url: url)
        httpMethod = method
        setValue(contentType, forHTTPHeaderField: "Content-Type")
    }
}

extension Job.Controller where Value == HTTPReply {
    /// Runs the upload `task` and completes the run with the response.
    fileprivate func upload(_ task: URLSessionUploadTask, url: URL, client: TransferClient) {
        let handler = TransferHandler.collecting(into: self, url: url, reportsReceiving: false)
        handler.onSent = { sent, expected in
            if expected > 0 { report(progress: min(1, Double(sent) / Double(expected))) }
        }
        client.start(task, handler: handler, for: self)
    }
}

extension Job.Controller {
    /// Completes the run on its own queue, never on the client's delegate queue: `map`, `then` and
    /// the run's handlers must not hold up other transfers.
    func completeOnQueue(with result: Result<Value, any Error>) {
        queue.async { complete(with: result) }
    }
}
