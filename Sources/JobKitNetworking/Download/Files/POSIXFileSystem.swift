import Foundation

/// The real file system: `DirectoryHandle`s and `POSIXDownloadFile`s over the operating system's
/// calls. The default of `DownloadManager.Configuration.fileSystem`.
package struct POSIXFileSystem: DownloadFileSystem {
    package init() {}

    package func createDirectory(atPath path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func openDirectory(atPath path: String) -> Result<any DownloadFolder, POSIXError> {
        DirectoryHandle.open(path).map { $0 }
    }
}
