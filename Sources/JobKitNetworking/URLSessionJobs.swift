import Dispatch
import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == HTTPResponse {
    /// Loads `request` with `session`; a non-2xx status fails with `HTTPStatusError`.
    ///
    /// Download progress is reported through the controller; cancelling the run cancels the
    /// `URLSessionTask`.
    ///
    /// ```swift
    /// let feed = try await Job.data(for: URLRequest(url: feedURL)).value.body
    /// ```
    public static func data(for request: URLRequest, session: URLSession = .shared) -> Job<HTTPResponse> {
        Job { controller in
            let task = session.dataTask(with: request) { data, response, error in
                controller.complete(with: validated(data ?? Data(), response, error))
            }
            controller.track(task, direction: .receiving)
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

/// Turns a URLSession completion into a result: transport errors as they are, non-2xx statuses as
/// `HTTPStatusError`.
func validated(_ data: Data, _ response: URLResponse?, _ error: (any Error)?) -> Result<HTTPResponse, any Error> {
    if let error { return .failure(error) }
    guard let http = response as? HTTPURLResponse else { return .failure(URLError(.badServerResponse)) }
    let response = HTTPResponse(http, body: data)
    return (200..<300).contains(response.status) ? .success(response) : .failure(HTTPStatusError(response))
}

/// Which way a task's bytes go, for progress.
enum TransferDirection {
    case sending, receiving
}

extension Job.Controller where Value == HTTPResponse {
    /// Uploads `data` and completes the run with the response.
    fileprivate func upload(_ data: Data, to url: URL, method: String, contentType: String, session: URLSession) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        let task = session.uploadTask(with: request, from: data) { body, response, error in
            complete(with: validated(body ?? Data(), response, error))
        }
        track(task, direction: .sending)
    }
}

extension Job.Controller {
    /// Starts `task`, cancels it with the run, and reports its progress until it completes.
    ///
    /// Progress is sampled every 50 ms from the task's byte counts, which works with any session
    /// (and its delegate) on every platform.
    func track(_ task: URLSessionTask, direction: TransferDirection) {
        let box = TaskBox(task)
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let controller = self
        timer.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50))
        timer.setEventHandler {
            let task = box.task
            let (done, expected) =
                switch direction {
                case .sending: (task.countOfBytesSent, task.countOfBytesExpectedToSend)
                case .receiving: (task.countOfBytesReceived, task.countOfBytesExpectedToReceive)
                }
            if expected > 0 { controller.report(progress: Double(done) / Double(expected)) }
            if task.state == .completed || controller.isCancelled { box.stop() }
        }
        box.timer = timer
        onCancel { box.task.cancel() }
        timer.activate()
        task.resume()
    }
}

/// A task and its progress timer, shared by closures.
// Safety: `task` is immutable and URLSessionTask is thread-safe; `timer` is set once before the timer
// starts and then only cancelled, which DispatchSource allows from any thread.
final class TaskBox: @unchecked Sendable {
    let task: URLSessionTask
    var timer: (any DispatchSourceTimer)?

    init(_ task: URLSessionTask) {
        self.task = task
    }

    func stop() {
        timer?.cancel()
    }
}
