import Foundation
import JobKit
import Testing

@testable import JobKitNetworking

/// A file system in memory for the download manager's tests (`Configuration.fileSystem`), with
/// crash semantics and injected faults, so that what the manager does with its files — and what
/// they survive — is tested without a disk.
///
/// - `kill()`: the process dies. Everything written stays; open files and their locks are gone, and
///   the folders and files the dead process had open fail every call after it.
/// - `powerLoss()`: as `kill()`, and what was not made durable is lost: a file's bytes written since
///   its last `fsync`, a folder's renames, unlinks and new files since its last sync. The machine
///   boots again: its boot identity (`DownloadFolder.bootIdentity`) changes.
/// - `reboot()`: a clean restart of the machine: everything is written back, then as `powerLoss()`.
/// - `writeBack(files:folders:)`: the kernel wrote back what it held (it does so every few seconds
///   by itself), so a later power loss keeps it.
/// - `fail(_:name:with:skipping:)`, `plant(_:named:before:of:)`: faults on the next matching operation.
///
/// ```swift
/// let disk = MemoryFileSystem()
/// configuration.fileSystem = disk
/// disk.fail(.write, name: "big.bin.part", with: ENOSPC, skipping: 3)
/// ```
final class MemoryFileSystem: DownloadFileSystem {
    private let disk = Watched<MemoryDisk>(MemoryDisk())

    func createDirectory(atPath path: String) throws {
        if let code = disk.withLock({ $0.makeFolders(path) }) {
            throw POSIXError(POSIXErrorCode(rawValue: code)!)
        }
    }

    func openDirectory(atPath path: String) -> Result<any DownloadFolder, POSIXError> {
        disk.withLock { disk -> Result<any DownloadFolder, POSIXError> in
            guard disk.folders[path] != nil else {
                return .failure(POSIXError(disk.facts(path, in: "/") == .missing ? .ENOENT : .ENOTDIR))
            }
            return .success(
                MemoryFolder(
                    disk: self.disk, path: path, epoch: disk.epoch, destinations: disk.destinations))
        }
    }

    // MARK: Crashes

    /// The process dies: everything written stays; its open files, locks and folders are gone.
    func kill() { disk.withLock { $0.kill() } }

    /// The power goes: as `kill()`, and what was not made durable is lost.
    func powerLoss() { disk.withLock { $0.powerLoss() } }

    /// The machine restarts cleanly: everything written reaches the disk, the process dies and the
    /// boot identity changes.
    func reboot() {
        disk.withLock {
            $0.writeBack(files: true, folders: true)
            $0.powerLoss()
        }
    }

    /// Whether the boot identity can be read (default true): false makes every folder tell none.
    var bootIdentityReadable: Bool {
        get { disk.read { $0.bootIdentityReadable } }
        set { disk.withLock { $0.bootIdentityReadable = newValue } }
    }

    /// The boot identity the folders tell now.
    var bootIdentity: String? { disk.read { $0.bootIdentity } }

    /// The kernel writes back file bytes (`files`) and folder entries (`folders`) it holds.
    func writeBack(files: Bool = true, folders: Bool = true) {
        disk.withLock { $0.writeBack(files: files, folders: folders) }
    }

    /// The kernel writes back the bytes in `range` of the file `name` in the folder at `folder`,
    /// and its size: earlier bytes never written back read as zeros after a power loss.
    func writeBack(_ range: Range<Int>, of name: String, in folder: String) {
        disk.withLock { $0.writeBack(range, of: name, in: folder) }
    }

    // MARK: Faults

    /// The `skipping + 1`-th `operation` on `name` from now fails with `code` (and does nothing).
    func fail(_ operation: MemoryFault.Operation, name: String, with code: Int32, skipping: Int = 0) {
        disk.withLock {
            $0.faults.append(MemoryFault(operation: operation, name: name, action: .fail(code), skipping: skipping))
        }
    }

    /// Just before the `skipping + 1`-th `operation` on `name` from now, `planted` appears under
    /// `plantedName` in its folder.
    func plant(
        _ planted: MemoryFault.Planted, named plantedName: String, before operation: MemoryFault.Operation,
        of name: String, skipping: Int = 0
    ) {
        let fault = MemoryFault(
            operation: operation, name: name, action: .plant(planted, name: plantedName), skipping: skipping)
        disk.withLock { $0.faults.append(fault) }
    }

    /// Drops the faults that have not acted yet.
    func clearFaults() {
        disk.withLock {
            $0.faults = []
            $0.plannedCrash = nil
        }
    }

    /// The process dies (a kill, or a power loss) just before the `operations + 1`-th operation
    /// from now that a fault could match, which fails with `EIO`; every later one of its fails too.
    func planCrash(afterOperations operations: Int, powerLoss: Bool) {
        disk.withLock { $0.plannedCrash = (operations, powerLoss) }
    }

    /// Calls off a planned crash that has not happened.
    func cancelCrash() { disk.withLock { $0.plannedCrash = nil } }

    /// A planned crash happened that `takeCrash()` has not taken.
    var hasCrashed: Bool { disk.read { $0.crashed != nil } }

    /// Whether a planned crash happened since the last call (a power loss or not, and the operation
    /// it came before), once.
    func takeCrash() -> (powerLoss: Bool, before: String)? {
        disk.withLock { disk in
            defer { disk.crashed = nil }
            return disk.crashed
        }
    }

    /// The faults that have not acted yet.
    var pendingFaults: [MemoryFault] { disk.read { $0.faults } }

    // MARK: Contents

    /// Puts a file (durable at once: it was there before) under `name` in the folder at `folder`.
    func put(_ data: Data, named name: String, in folder: String) {
        disk.withLock { $0.put(.file(data), named: name, in: folder, durable: true) }
    }

    /// Puts `planted` (durable at once) under `name` in the folder at `folder`.
    func plant(_ planted: MemoryFault.Planted, named name: String, in folder: String) {
        disk.withLock { $0.put(planted, named: name, in: folder, durable: true) }
    }

    /// What is under `name` in the folder at `folder`.
    func facts(of name: String, in folder: String) -> FileFacts {
        disk.read { $0.facts(name, in: folder) }
    }

    /// The facts of each of `names` in `folder`, read at once.
    func facts(of names: [String], in folder: String) -> [FileFacts] {
        disk.read { disk in names.map { disk.facts($0, in: folder) } }
    }

    /// The bytes of the file `name` in the folder at `folder`; nil when there is none.
    func contents(of name: String, in folder: String) -> Data? {
        disk.read { $0.contents(of: name, in: folder) }
    }

    /// Which bytes the file `name` in `folder` has: equal stamps, equal bytes (nil: no file).
    func stamp(of name: String, in folder: String) -> MemoryDisk.Stamp? {
        disk.read { $0.stamp(of: name, in: folder) }
    }

    /// The bytes of `name` in `folder` that a power loss now would leave.
    func durableContents(of name: String, in folder: String) -> Data? {
        disk.read { $0.durableContents(of: name, in: folder) }
    }

    /// The names in the folder at `folder`, sorted.
    func names(in folder: String) -> [String] {
        disk.read { $0.names(in: folder) }
    }

    // MARK: Waiting

    /// Suspends until `condition` holds for the disk, resumed by the operation (a write, a rename, an
    /// unlink…) that makes it true (see `Watched.until`). The condition looks at the `MemoryDisk`
    /// it is given (`contents(of:in:)`, `names(in:)`), never at this file system.
    @discardableResult
    func until(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: @escaping @Sendable (MemoryDisk) -> Bool
    ) async -> Bool {
        await disk.until(what, sourceLocation: sourceLocation, condition)
    }
}
