// Stand-ins for "A download manager": a screen and a download job.
import Foundation
import JobKit

final class DownloadScreen: Sendable {
    func show(_ url: URL, _ text: String) {}
    func complete(_ url: URL) {}
    func banner(_ text: String) {}
}

func download(_ url: URL) -> Job<URL> { .just(url) }

let screen = DownloadScreen()
let urls = (1...20).map { URL(string: "http://127.0.0.1:8080/downloads/download-\($0).bin")! }
