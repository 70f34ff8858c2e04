// Stand-ins for the samples of `updates()` and `DownloadList`: a manager on a scratch folder.
import Foundation
import JobKitNetworking

let manager = try! DownloadManager(directory: FileManager.default.temporaryDirectory.appending(path: "downloads"))
