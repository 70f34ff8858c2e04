import Foundation
import JobKit

@testable import JobKitNetworking

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An open folder of a `MemoryFileSystem`. Opened before a crash, it is dead after it: its calls
/// fail with `EIO` (a dead process makes none), and its files with `EBADF`.
final class MemoryFolder: DownloadFolder {
    let path: String
    private let disk: Watched<MemoryDisk>
    /// The disk's crash count when it was opened.
    private let epoch: Int
    /// The claims of the process that opened it.
    let destinations: ActiveDestinations

    init(disk: Watched<MemoryDisk>, path: String, epoch: Int, destinations: ActiveDestinations) {
        self.disk = disk
        self.path = path
        self.epoch = epoch
        self.destinations = destinations
    }

    /// Runs `body` on the disk for a `name` that is one entry; `EINVAL` for another, `EIO` once dead.
    private func step<Value>(
        _ name: String?, _ body: (inout MemoryDisk) -> Result<Value, POSIXError>
    ) -> Result<Value, POSIXError> {
        if let name, !DirectoryHandle.isEntryName(name) { return .failure(POSIXError(.EINVAL)) }
        return disk.withLock { disk in
            guard disk.epoch == epoch else { return .failure(POSIXError(.EIO)) }
            return body(&disk)
        }
    }

    func openDirectory(_ name: String) -> Result<any DownloadFolder, POSIXError> {
        step(name) { $0.openFolder(name, in: path) }.map {
            MemoryFolder(disk: disk, path: $0, epoch: epoch, destinations: destinations)
        }
    }

    func openFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError> {
        open(name, flags, owned: false)
    }

    func openOwnedFile(_ name: String, _ flags: Int32, mode: mode_t) -> Result<any DownloadFile, POSIXError> {
        open(name, flags, owned: true)
    }

    private func open(_ name: String, _ flags: Int32, owned: Bool) -> Result<any DownloadFile, POSIXError> {
        step(name) { $0.open(name, in: path, flags, owned: owned) }.map {
            MemoryFile(disk: disk, id: $0, folder: path)
        }
    }

    @discardableResult
    func unlink(_ name: String) -> POSIXErrorCode? {
        Self.code(step(name) { disk in disk.unlink(name, in: path).map { .failure(POSIXError($0)) } ?? .success(()) })
    }

    func rename(_ name: String, to newName: String, replacing: Bool) -> POSIXErrorCode? {
        guard DirectoryHandle.isEntryName(newName) else { return .EINVAL }
        return Self.code(
            step(name) { disk in
                disk.rename(name, to: newName, in: path, replacing: replacing).map { .failure(POSIXError($0)) }
                    ?? .success(())
            })
    }

    private static func code(_ result: Result<Void, POSIXError>) -> POSIXErrorCode? {
        if case .failure(let error) = result { return error.code }
        return nil
    }

    func facts(_ name: String) -> FileFacts {
        (try? step(name) { .success($0.facts(name, in: path)) }.get()) ?? .missing
    }

    func identity(of name: String) -> FileIdentity? {
        (try? step(name) { .success($0.identity(of: name, in: path)) }.get()) ?? nil
    }

    var isWritable: Bool {
        (try? step(nil) { _ in .success(true) }.get()) ?? false
    }

    func sync() -> Int32? {
        switch step(nil, { disk in .success(disk.syncFolder(path)) }) {
        case .success(let code): code
        case .failure(let error): error.code.rawValue
        }
    }

    var bootIdentity: String? {
        disk.read { $0.bootIdentity }
    }
}
