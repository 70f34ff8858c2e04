// Stand-ins for the download manager guide: the folder and the files to fetch.
import Foundation

let folder = FileManager.default.temporaryDirectory.appending(path: "downloads")
let isoURL = URL(string: "http://127.0.0.1:8080/files/a.iso")!
let isoDigest = String(repeating: "0", count: 64)
let notesURL = URL(string: "http://127.0.0.1:8080/files/notes.txt")!
