import Foundation

/// A fresh folder for one test.
package func scratchFolder() throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jobkit-net-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Deterministic bytes, different for each `seed`.
package func pattern(_ count: Int, seed: Int = 1) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 101) })
}

/// The size of the file at `url`, or nil.
package func fileSize(_ url: URL) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue
}

package func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }
