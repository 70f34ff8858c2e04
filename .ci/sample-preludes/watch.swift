// Stand-ins for the README's "Watch a run" sample: a list and a banner on screen, a download job.
import Foundation
import JobKit

final class DownloadList: Sendable {
    func show(_ state: JobState, for url: URL) {}
    func show(_ result: Result<URL, any Error>, for url: URL) {}
}

final class Banner: Sendable {
    func show(_ message: String) {}
}

func downloading(_ url: URL, to destination: URL) -> Job<URL> { .just(destination) }

let list = DownloadList()
let banner = Banner()
let url = URL(string: "http://127.0.0.1:8080/files/a.bin")!
let destination = URL(fileURLWithPath: "/tmp/a.bin")
