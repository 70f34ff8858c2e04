import Foundation
import JobKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Job where Value == URL {
    /// Downloads `url` to `destination`, through `destination.part`: the file appears under its
    /// name only once complete, so a failed or cancelled download never leaves a file that looks
    /// whole. A `.part` left by an earlier attempt is resumed with a `Range` request when the server
    /// answers 206; otherwise the download starts over.
    ///
    /// Progress is reported through the controller; the run finishes with `destination`.
    public static func download(from url: URL, to destination: URL, session: URLSession = .shared) -> Job<URL> {
        Job { controller in
            let partial = destination.appendingPathExtension("part")
            let existing = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0
            var request = URLRequest(url: url)
            if existing > 0 { request.setValue("bytes=\(existing)-", forHTTPHeaderField: "Range") }
            let task = session.downloadTask(with: request) { location, response, error in
                controller.complete(
                    with: Result {
                        guard let location else { throw error ?? URLError(.unknown) }
                        let status = try validated(Data(), response, error).get().status
                        try assemble(location, status: status, resumedFrom: existing, into: partial)
                        try? FileManager.default.removeItem(at: destination)
                        try FileManager.default.moveItem(at: partial, to: destination)
                        return destination
                    })
            }
            controller.track(task, direction: .receiving)
        }
    }
}

/// Moves the downloaded bytes into the `.part` file: appended after a 206, replacing it after a 200.
private func assemble(_ location: URL, status: Int, resumedFrom existing: Int, into partial: URL) throws {
    if status == 206, existing > 0 {
        let handle = try FileHandle(forWritingTo: partial)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(contentsOf: location))
    } else {
        try? FileManager.default.removeItem(at: partial)
        try FileManager.default.moveItem(at: location, to: partial)
    }
}
