import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == URL {
    /// Downloads `url` to `destination`, streaming into `destination.part`: the file appears under
    /// its name only once complete, so a failed or cancelled download never leaves a file that looks
    /// whole. A `.part` left by an earlier attempt — cancelled, failed, or killed — is resumed with a
    /// `Range` request when the server answers 206; otherwise the download starts over.
    ///
    /// Progress is reported through the controller; the run finishes with `destination`.
    public static func download(from url: URL, to destination: URL, session: URLSession = .shared) -> Job<URL> {
        Job { controller in
            let partial = destination.appendingPathExtension("part")
            let existing = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int64) ?? 0
            var request = URLRequest(url: url)
            if existing > 0 { request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }
            let (transfers, delegate) = TransferSessions.session(for: session)
            let handler = TransferHandler()
            var file: FileHandle?
            var errorBody = Data()
            var written: Int64 = 0
            var total: Int64 = -1
            handler.onResponse = { response in
                guard (200..<300).contains(response.statusCode) else { return }
                let resumes = response.statusCode == 206 && existing > 0
                if !resumes, !FileManager.default.createFile(atPath: partial.path, contents: nil) {
                    throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: partial.path])
                }
                file = try FileHandle(forWritingTo: partial)
                if resumes { try file?.seekToEnd() }
                written = resumes ? existing : 0
                total = response.expectedContentLength > 0 ? written + response.expectedContentLength : -1
            }
            handler.onData = { data in
                guard let file else { return errorBody.append(data.prefix(HTTPStatusError.excerptLimit)) }
                try file.write(contentsOf: data)
                written += Int64(data.count)
                if total > 0 { controller.report(progress: Double(written) / Double(total)) }
            }
            handler.onComplete = { response, error in
                try? file?.close()
                controller.complete(
                    with: Result {
                        _ = try validated(errorBody, response, error).get()
                        try? FileManager.default.removeItem(at: destination)
                        try FileManager.default.moveItem(at: partial, to: destination)
                        return destination
                    })
            }
            controller.start(transfers.dataTask(with: request), handler: handler, on: delegate)
        }
    }
}
