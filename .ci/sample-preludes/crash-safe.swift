// Stand-ins for the crash-safe downloads guide: the files to fetch and where they go.
import Foundation

let urls = [URL(string: "http://127.0.0.1:8080/files/a.bin")!]
let folder = FileManager.default.temporaryDirectory
