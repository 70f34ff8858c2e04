import Foundation

@testable import JobKitNetworking

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The state of a `MemoryFileSystem`, under its lock: folders by path, files by inode, open files,
/// and for each what survives a power loss.
///
/// What is durable: a file's bytes as of its last `fsync` (none before), a folder's entries as of
/// its last sync. Folders themselves are durable once made (a simplification: the manager makes
/// its folders once, before anything else). A crash (`kill` or `powerLoss`) ends every open file,
/// releasing its lock, and the folders opened before it (their calls fail with `EIO`, as a dead
/// process makes none).
struct MemoryDisk: Sendable {
    enum Entry: Equatable, Sendable {
        case file(Int)
        case directory
    }

    struct Inode: Sendable {
        var data: [UInt8] = [] { didSet { version += 1 } }
        /// Bumped by every change of `data`: with the inode's number, a stamp of its bytes.
        private(set) var version = 0
        var durable: [UInt8] = []
        /// The open file (description) holding its `flock`.
        var lock: Int?
    }

    struct Folder: Sendable {
        var entries: [String: Entry] = [:]
        var durable: [String: Entry] = [:]
    }

    struct Handle: Sendable {
        var inode: Int
        /// The name it was opened under, for faults.
        var name: String
        var position: Int64 = 0
        var appends: Bool
        var readable: Bool
        var writable: Bool
        /// Shared by a handle and its duplicates: the owner of a lock.
        var description: Int
    }

    private(set) var folders: [String: Folder] = ["/": Folder()]
    private(set) var inodes: [Int: Inode] = [:]
    private var handles: [Int: Handle] = [:]
    /// Bumped by each crash: folders opened before it are dead.
    private(set) var epoch = 0
    /// The downloads the living process runs (its claims die with it).
    private(set) var destinations = ActiveDestinations()
    /// The machine's boots: a power loss starts the next one.
    private var boots = 1
    /// The boot identity a folder tells (`DownloadFolder.bootIdentity`): one per boot, or nil
    /// while `bootIdentityReadable` is false.
    var bootIdentity: String? { bootIdentityReadable ? "memory-boot-\(boots)" : nil }
    /// Whether the boot identity can be read (a `/proc` not mounted, a sandbox: false).
    var bootIdentityReadable = true
    private var nextID = 1
    var faults: [MemoryFault] = []
    /// A crash among the coming operations: after `operations` more of them the process dies (and
    /// the power goes, with `powerLoss`) just before the next one, which fails with `EIO`.
    var plannedCrash: (operations: Int, powerLoss: Bool)?
    /// The planned crash happened, until the simulation takes it: whether it was a power loss, and
    /// the operation it came before.
    var crashed: (powerLoss: Bool, before: String)?

    // MARK: Crashes

    /// The process dies: everything written stays; open files and their locks are gone.
    mutating func kill() {
        epoch += 1
        destinations = ActiveDestinations()
        handles = [:]
        for id in inodes.keys { inodes[id]!.lock = nil }
    }

    /// The power goes: as `kill`, and what was not made durable is lost; the machine boots again.
    mutating func powerLoss() {
        kill()
        boots += 1
        for id in inodes.keys { inodes[id]!.data = inodes[id]!.durable }
        for path in folders.keys { folders[path]!.entries = folders[path]!.durable }
    }

    /// The kernel writes back what it holds: file bytes (`files`) and folder entries (`folders`).
    mutating func writeBack(files: Bool, folders writesFolders: Bool) {
        if files { for id in inodes.keys { inodes[id]!.durable = inodes[id]!.data } }
        if writesFolders { for path in folders.keys { folders[path]!.durable = folders[path]!.entries } }
    }

    /// The kernel writes back the bytes in `range` of the file `name` in `folder` (and its size:
    /// bytes before the range that were never written back read as zeros after a power loss, as
    /// the holes of a file whose later pages reached the disk first do).
    mutating func writeBack(_ range: Range<Int>, of name: String, in folder: String) {
        guard case .file(let id)? = folders[folder]?.entries[name] else { return }
        var inode = inodes[id]!
        let range = range.clamped(to: 0..<inode.data.count)
        if inode.durable.count < range.upperBound {
            inode.durable += [UInt8](repeating: 0, count: range.upperBound - inode.durable.count)
        }
        inode.durable.replaceSubrange(range, with: inode.data[range])
        inodes[id] = inode
    }

    // MARK: Faults

    /// The fault for `operation` on `name` in `folder`, if one acts now: its `errno`, or nil
    /// (after planting what it plants).
    mutating func fault(_ operation: MemoryFault.Operation, _ name: String, in folder: String) -> Int32? {
        if let crash = plannedCrash {
            if crash.operations > 0 {
                plannedCrash!.operations -= 1
            } else {
                plannedCrash = nil
                crashed = (crash.powerLoss, "the \(operation) of \(name)")
                if crash.powerLoss { powerLoss() } else { kill() }
                return EIO
            }
        }
        guard let index = faults.firstIndex(where: { $0.operation == operation && $0.name == name }) else {
            return nil
        }
        if faults[index].skipping > 0 {
            faults[index].skipping -= 1
            return nil
        }
        switch faults.remove(at: index).action {
        case .fail(let code): return code
        case .plant(let planted, let plantedName):
            put(planted, named: plantedName, in: folder, durable: true)
            return nil
        }
    }

    // MARK: Folders

    /// Makes the folder at `path` and its parents.
    mutating func makeFolders(_ path: String) -> Int32? {
        var current = ""
        for component in path.split(separator: "/").map(String.init) {
            let parent = current.isEmpty ? "/" : current
            current += "/" + component
            switch folders[parent]!.entries[component] {
            case .file?: return ENOTDIR
            case .directory?: continue
            case nil: addFolder(component, in: parent)
            }
        }
        return nil
    }

    private mutating func addFolder(_ name: String, in parent: String) {
        folders[parent]!.entries[name] = .directory
        folders[parent]!.durable[name] = .directory
        folders[Self.path(of: name, in: parent)] = Folder()
    }

    static func path(of name: String, in folder: String) -> String {
        folder == "/" ? "/" + name : folder + "/" + name
    }

    /// Opens (making it when missing) the folder `name` in `folder`: its path, or the `errno`.
    mutating func openFolder(_ name: String, in folder: String) -> Result<String, POSIXError> {
        switch folders[folder]!.entries[name] {
        case .file?: return .failure(POSIXError(.ENOTDIR))
        case .directory?: break
        case nil: addFolder(name, in: folder)
        }
        return .success(Self.path(of: name, in: folder))
    }

    func facts(_ name: String, in folder: String) -> FileFacts {
        switch folders[folder]?.entries[name] {
        case nil: .missing
        case .directory?: .directory
        case .file(let id)?: .file(size: Int64(inodes[id]!.data.count))
        }
    }

    func identity(of name: String, in folder: String) -> FileIdentity? {
        switch folders[folder]?.entries[name] {
        case nil: nil
        case .directory?: FileIdentity(device: 1, inode: 0)
        case .file(let id)?: FileIdentity(device: 1, inode: UInt64(id))
        }
    }

    mutating func syncFolder(_ folder: String) -> Int32? {
        if let code = fault(.folderSync, folder, in: folder) { return code }
        folders[folder]!.durable = folders[folder]!.entries
        return nil
    }

    /// Puts `planted` under `name` in `folder` now, replacing what was there. A durable one makes the
    /// folder's earlier changes durable too, as a journaling file system commits a folder's changes
    /// in order (a file created after a rename is never on the disk without the rename).
    mutating func put(_ planted: MemoryFault.Planted, named name: String, in folder: String, durable: Bool) {
        let entry: Entry
        switch planted {
        case .directory:
            entry = .directory
            folders[Self.path(of: name, in: folder)] = folders[Self.path(of: name, in: folder)] ?? Folder()
        case .file(let data):
            entry = .file(newID())
            inodes[nextID - 1] = Inode(data: Array(data), durable: durable ? Array(data) : [])
        }
        folders[folder]!.entries[name] = entry
        if durable { folders[folder]!.durable = folders[folder]!.entries }
    }

    // MARK: Names

    mutating func open(_ name: String, in folder: String, _ flags: Int32, owned: Bool) -> Result<Int, POSIXError> {
        if let code = fault(.open, name, in: folder) { return .failure(POSIXError(POSIXErrorCode(rawValue: code)!)) }
        let access = flags & O_ACCMODE
        let inode: Int
        switch folders[folder]!.entries[name] {
        case .directory?: return .failure(POSIXError(access == O_RDONLY ? .EINVAL : .EISDIR))
        case .file(let id)?:
            if flags & O_CREAT != 0, flags & O_EXCL != 0 { return .failure(POSIXError(.EEXIST)) }
            inode = id
        case nil:
            guard flags & O_CREAT != 0 else { return .failure(POSIXError(.ENOENT)) }
            inode = newID()
            inodes[inode] = Inode()
            folders[folder]!.entries[name] = .file(inode)
        }
        if owned, links(inode) != 1 { return .failure(POSIXError(.EMLINK)) }
        let id = newID()
        handles[id] = Handle(
            inode: inode, name: name, appends: flags & O_APPEND != 0, readable: access != O_WRONLY,
            writable: access != O_RDONLY, description: id)
        return .success(id)
    }

    private func links(_ inode: Int) -> Int {
        folders.values.reduce(0) { count, folder in count + folder.entries.values.filter { $0 == .file(inode) }.count }
    }

    mutating func unlink(_ name: String, in folder: String) -> POSIXErrorCode? {
        if let code = fault(.unlink, name, in: folder) { return POSIXErrorCode(rawValue: code) }
        switch folders[folder]!.entries[name] {
        case nil: return nil
        case .directory?: return .EISDIR
        case .file?:
            folders[folder]!.entries[name] = nil
            return nil
        }
    }

    mutating func rename(_ name: String, to newName: String, in folder: String, replacing: Bool) -> POSIXErrorCode? {
        if let code = fault(.rename, name, in: folder) { return POSIXErrorCode(rawValue: code) }
        guard let entry = folders[folder]!.entries[name] else { return .ENOENT }
        switch folders[folder]!.entries[newName] {
        case nil: break
        case _? where !replacing: return .EEXIST
        case .directory?: return .EISDIR
        case .file?: break
        }
        folders[folder]!.entries[name] = nil
        folders[folder]!.entries[newName] = entry
        return nil
    }

    private mutating func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: Open files

    /// Runs `body` with the open file `id`; `EBADF` when it is closed (or died in a crash).
    mutating func with<Value>(
        _ id: Int, _ body: (inout Handle, inout Inode) -> Result<Value, POSIXError>
    ) -> Result<Value, POSIXError> {
        guard var handle = handles[id] else { return .failure(POSIXError(.EBADF)) }
        defer { handles[id] = handle }
        // In place: a copy of the inode would copy its bytes on each write.
        return body(&handle, &inodes[handle.inode]!)
    }

    /// The fault for `operation` on open file `id`, matched by the names the file has in `folder` now
    /// (a journal's compaction renames its new file over the journal), or the one it was opened under.
    mutating func fault(_ operation: MemoryFault.Operation, file id: Int, in folder: String) -> POSIXError? {
        guard let handle = handles[id] else { return POSIXError(.EBADF) }
        guard faults.contains(where: { $0.operation == operation }) else {
            return fault(operation, handle.name, in: folder).map { POSIXError(POSIXErrorCode(rawValue: $0)!) }
        }
        let current = folders[folder]?.entries.filter { $0.value == .file(handle.inode) }.map(\.key) ?? []
        let name = current.first { name in faults.contains { $0.operation == operation && $0.name == name } }
        return fault(operation, name ?? handle.name, in: folder).map { POSIXError(POSIXErrorCode(rawValue: $0)!) }
    }

    mutating func duplicate(_ id: Int) -> Result<Int, POSIXError> {
        guard let handle = handles[id] else { return .failure(POSIXError(.EBADF)) }
        let copy = newID()
        handles[copy] = handle
        return .success(copy)
    }

    mutating func close(_ id: Int) {
        guard let handle = handles.removeValue(forKey: id) else { return }
        if !handles.values.contains(where: { $0.description == handle.description }),
            inodes[handle.inode]?.lock == handle.description
        {
            inodes[handle.inode]!.lock = nil
        }
    }

    // MARK: Inspection

    /// Which bytes the file `name` in `folder` has (its inode and that inode's version): equal stamps,
    /// equal bytes. Nil when there is no file under the name.
    func stamp(of name: String, in folder: String) -> Stamp? {
        guard case .file(let id)? = folders[folder]?.entries[name] else { return nil }
        return Stamp(inode: id, version: inodes[id]!.version)
    }

    /// Which bytes a file has: its inode (never reused) and that inode's version.
    struct Stamp: Equatable, Sendable {
        var inode: Int
        var version: Int
    }

    func contents(of name: String, in folder: String) -> Data? {
        guard case .file(let id)? = folders[folder]?.entries[name] else { return nil }
        return Data(inodes[id]!.data)
    }

    /// The bytes of `name` in `folder` that a power loss now would leave (nil: it would leave no
    /// file under the name).
    func durableContents(of name: String, in folder: String) -> Data? {
        guard case .file(let id)? = folders[folder]?.durable[name] else { return nil }
        return Data(inodes[id]!.durable)
    }

    func names(in folder: String) -> [String] {
        folders[folder]?.entries.keys.sorted() ?? []
    }
}
