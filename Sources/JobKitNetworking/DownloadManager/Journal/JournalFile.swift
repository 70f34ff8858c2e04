import Dispatch
import Foundation
import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The open journal file, holding the directory's exclusive `flock`. Created 0600 (it names the
/// URLs, which may carry tokens); one found with wider permissions is narrowed to 0600.
///
/// Not thread-safe: the manager uses it from the holder of the journal's pen (`JournalPen`) alone.
final class JournalFile {
    /// The directory's path, for messages.
    var directory: String { folder.path }
    /// The journal's path, for messages.
    var path: String { folder.path(of: DownloadJournal.fileName) }
    let folder: any DownloadFolder
    /// `.system`: `sync` and `replace` flush to disk; `.process`: they do not.
    let durability: Durability
    /// The open journal; nil once closed.
    private(set) var descriptor: (any DownloadFile)?
    /// Asked before each write, sync or rewrite: an `errno` to fail with (tests inject a full disk).
    private let injectedFailure: @Sendable () -> Int32?

    /// The journal's length in bytes, as this process wrote it.
    private var length: Int64 = 0
    /// A write or sync failed and cutting the lines back off failed too: the file's end is not what
    /// the manager knows (a torn line, or records of a call that failed). Nothing is appended to it
    /// until it is written whole again (`replace`).
    private(set) var isTorn = false

    private init(
        folder: any DownloadFolder, durability: Durability, descriptor: any DownloadFile,
        injectedFailure: @escaping @Sendable () -> Int32?
    ) {
        self.folder = folder
        self.durability = durability
        self.descriptor = descriptor
        self.injectedFailure = injectedFailure
    }

    deinit {
        close()
    }

    /// Opens the directory at `directory` (creating it if needed) for a manager, or its `subfolder`
    /// (`a/b`, see `Configuration.subfolder`): each component checked by the name rule before anything is
    /// made, then made and opened one by one from `directory`, never through a symbolic link.
    ///
    /// - Throws: `.cannotUseDirectory` when it cannot be made or opened, or is not a directory; for a
    ///   subfolder that breaks the rule; for a link (or a file) at one of its components' names.
    static func openFolder(
        _ directory: URL, subfolder: String? = nil, fileSystem: any DownloadFileSystem = POSIXFileSystem()
    ) throws(DownloadManagerError) -> any DownloadFolder {
        let path = directory.standardizedFileURL.path
        let components = subfolder.map { $0.split(separator: "/", omittingEmptySubsequences: false).map(String.init) }
        // Every component is checked before anything is made.
        if let subfolder, let components {
            func refuse(_ reason: String) -> DownloadManagerError {
                .cannotUseDirectory(path + "/" + subfolder, reason: reason)
            }
            guard components.count <= 16 else { throw refuse("a subfolder is at most 16 folders deep") }
            for component in components {
                do {
                    try DownloadManager.checkName(component)
                } catch {
                    let reason = if case .invalidName(_, let reason) = error { reason } else { "\(error)" }
                    throw refuse("'\(component)': \(reason)")
                }
            }
        }
        var folder = try openFolder(path, fileSystem: fileSystem)
        for component in components ?? [] {
            switch folder.openDirectory(component) {
            case .success(let opened): folder = opened
            case .failure(let error) where error.code == .ELOOP || error.code == .ENOTDIR:
                throw .cannotUseDirectory(
                    folder.path(of: component),
                    reason: "it is a symbolic link or not a directory: a subfolder is never reached through a link")
            case .failure(let error):
                throw .cannotUseDirectory(folder.path(of: component), reason: SystemCall.errorText(error.code.rawValue))
            }
        }
        return folder
    }

    /// Opens the directory at `path` (creating it if needed), following a link to it: the caller chose it.
    private static func openFolder(
        _ path: String, fileSystem: any DownloadFileSystem
    ) throws(DownloadManagerError) -> any DownloadFolder {
        do {
            try fileSystem.createDirectory(atPath: path)
        } catch {
            throw .cannotUseDirectory(path, reason: "cannot create it (\(error.localizedDescription))")
        }
        switch fileSystem.openDirectory(atPath: path) {
        case .success(let folder): return folder
        case .failure(let error) where error.code == .ENOTDIR:
            throw .cannotUseDirectory(path, reason: "not a directory")
        case .failure(let code): throw .cannotUseDirectory(path, reason: SystemCall.errorText(code.code.rawValue))
        }
    }

    /// Opens (creating if needed) the journal of `directory`, locked, and reads it.
    static func open(
        directory: URL, durability: Durability = .process
    ) throws(DownloadManagerError) -> (JournalFile, DownloadJournal.Contents) {
        try open(in: openFolder(directory), durability: durability)
    }

    /// Opens (creating if needed) the journal in `folder`, locked, and reads it.
    ///
    /// - Throws: `.directoryInUse` when another manager holds the lock, `.cannotUseDirectory` when
    ///   the journal cannot be made, opened or read, `.unsupportedJournal` when it is not a journal
    ///   this version reads (the file is left as it is).
    static func open(
        in folder: any DownloadFolder, durability: Durability = .process,
        injectedFailure: @escaping @Sendable () -> Int32? = { nil }
    ) throws(DownloadManagerError) -> (JournalFile, DownloadJournal.Contents) {
        let name = DownloadJournal.fileName
        // The lock is on the journal's inode; compaction renames a new, already locked file over it
        // (`openLockedFile` opens the one under the name anew). A lock that is busy is tried again for
        // a moment (`SystemCall.lockPatience`).
        let deadline = DispatchTime.now().uptimeNanoseconds + SystemCall.lockPatience
        // Only a regular file with one link: never a FIFO (which would block), nor a file hard-linked
        // from elsewhere (whose mode and bytes are somebody else's).
        let descriptor: any DownloadFile
        switch folder.openLockedFile(name, O_RDWR | O_CREAT | O_APPEND, mode: 0o600, until: deadline) {
        case .success(let opened): descriptor = opened
        case .failure(.cannotOpen(let error)):
            let reason =
                switch error.code {
                case .EINVAL: "it is not a regular file"
                case .EMLINK: "it has other hard links, so it is not the manager's"
                default: SystemCall.errorText(error.code.rawValue)
                }
            throw .cannotUseDirectory(folder.path, reason: "cannot open \(folder.path(of: name)): \(reason)")
        case .failure(.cannotLock(let code)) where code != EWOULDBLOCK:
            throw .cannotUseDirectory(folder.path, reason: SystemCall.errorText(code))
        case .failure(.cannotLock), .failure(.keptChanging):
            throw .directoryInUse(folder.path)
        }
        descriptor.restrictToOwner()
        let file = JournalFile(
            folder: folder, durability: durability, descriptor: descriptor, injectedFailure: injectedFailure)
        do {
            return (file, try file.read())
        } catch {
            file.close()
            throw error
        }
    }

    /// Reads the journal a block at a time (`DownloadJournal.Reader`): never whole in memory.
    private func read() throws(DownloadManagerError) -> DownloadJournal.Contents {
        guard let descriptor else { throw .closed }
        var reader = DownloadJournal.Reader()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count: Int
            switch buffer.withUnsafeMutableBytes({ descriptor.read(into: $0, at: length) }) {
            case .success(let read): count = read
            case .failure(let code):
                throw .cannotUseDirectory(
                    directory, reason: "cannot read \(path): \(SystemCall.errorText(code.code.rawValue))")
            }
            do throws(DownloadJournal.ReadError) {
                if count == 0 { return try reader.finish() }
                try buffer.withUnsafeBytes { bytes in
                    Result { () throws(DownloadJournal.ReadError) in
                        try reader.read(UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
                    }
                }.get()
            } catch {
                switch error {
                case .notAJournal: throw .unsupportedJournal(path, reason: "it is not a JobKit download journal")
                case .unsupportedVersion(let version):
                    throw .unsupportedJournal(
                        path, reason: "it has version \(version); this JobKit reads version \(DownloadJournal.version)")
                }
            }
            length += Int64(count)
        }
    }

    /// Appends `data` (whole lines) with one write.
    ///
    /// A write that fails part-way (a full disk) is cut back off, so that the next line does not
    /// land on a torn one.
    func append(_ data: Data) throws(DownloadManagerError) {
        try append(CollectionOfOne(data))
    }

    /// Appends `chunks` (whole lines), a write each, all or nothing: a write that fails (a full disk)
    /// cuts the journal back to where it ended before the first, so that the next line does not land
    /// on a torn one. The chunks are made as they are written: a long batch is never in memory whole.
    func append(_ chunks: some Sequence<Data>) throws(DownloadManagerError) {
        guard let descriptor else { throw .closed }
        guard !isTorn else {
            throw .cannotUseDirectory(directory, reason: "cannot append to \(path): its end is torn (it is rewritten)")
        }
        var written: Int64 = 0
        var failure = injectedFailure()
        if failure == nil {
            for chunk in chunks {
                failure = chunk.withUnsafeBytes { descriptor.write($0) }
                guard failure == nil else { break }
                written += Int64(chunk.count)
            }
        }
        if let failure {
            if descriptor.truncate(to: length) != nil { isTorn = true }
            throw .cannotUseDirectory(directory, reason: "cannot write \(path): \(SystemCall.errorText(failure))")
        }
        length += written
    }

    /// Appends `chunks` and syncs them (with `.system` durability): all or nothing — when the sync
    /// fails, the lines are cut back off, so that no record of a failed call is honoured later; the
    /// cut is synced in turn (best effort: a disk that failed once may fail again), so that a power
    /// loss soon after does not bring the lines back.
    func appendSynced(_ chunks: some Sequence<Data>) throws(DownloadManagerError) {
        let before = length
        try append(chunks)
        do {
            try sync()
        } catch {
            if let descriptor, descriptor.truncate(to: before) == nil {
                length = before
                _ = descriptor.sync()
            } else {
                isTorn = true
            }
            throw error
        }
    }

    /// Flushes the journal to disk (with `.system` durability; else does nothing).
    func sync() throws(DownloadManagerError) {
        guard let descriptor else { throw .closed }
        guard durability == .system else { return }
        if let failure = injectedFailure() ?? descriptor.sync() {
            throw .cannotUseDirectory(directory, reason: "cannot sync \(path): \(SystemCall.errorText(failure))")
        }
    }

    /// Flushes the journal to disk, and the folder's entry of it (with `.system` durability; else does
    /// nothing): what was read from it is then what a power loss leaves under its name. A recovery's
    /// unlinks need both: the process that rewrote the journal may have died before it flushed the
    /// folder, whose entry would then still name the journal before the rewrite.
    func syncWithFolder() throws(DownloadManagerError) {
        try sync()
        guard durability == .system, let failure = folder.sync() else { return }
        throw .cannotUseDirectory(
            directory, reason: "cannot sync the folder of \(path): \(SystemCall.errorText(failure))")
    }

    /// Syncs the journal in `folder` to disk through a descriptor of its own (which holds no lock).
    ///
    /// - Returns: the `errno` of the failure (of the open or the sync); nil when synced.
    @discardableResult
    static func sync(in folder: any DownloadFolder) -> Int32? {
        let file: any DownloadFile
        switch folder.openFile(DownloadJournal.fileName, O_RDONLY) {
        case .success(let opened): file = opened
        case .failure(let failure): return failure.code.rawValue
        }
        defer { file.close() }
        return file.sync()
    }

    /// Replaces the journal with `data`: see `replace(with:)` of chunks.
    func replace(with data: Data) throws(DownloadManagerError) {
        try replace(with: CollectionOfOne(data))
    }

    /// Replaces the journal with `chunks`: written to a temporary file (0600) that is locked first,
    /// renamed over the journal (with `.system` durability: synced before, and the folder synced
    /// after: a failure of that sync throws, the new file being the journal). The old file's
    /// descriptor is closed. The chunks are made as they are written: a
    /// journal of many items is never in memory whole as text.
    func replace(with chunks: some Sequence<Data>) throws(DownloadManagerError) {
        guard let descriptor else { throw .closed }
        let temporary = DownloadJournal.fileName + ".tmp"
        let temporaryPath = folder.path(of: temporary)
        folder.unlink(temporary)
        let fresh: any DownloadFile
        switch folder.openFile(temporary, O_RDWR | O_CREAT | O_EXCL | O_APPEND, mode: 0o600) {
        case .success(let opened): fresh = opened
        case .failure(let code):
            throw .cannotUseDirectory(
                directory, reason: "cannot write \(temporaryPath): \(SystemCall.errorText(code.code.rawValue))")
        }
        // One try, no waiting: the file was just made (`O_EXCL`), so a lock on it is another manager's.
        guard fresh.lockExclusively(until: 0) == nil else {
            fresh.close()
            throw .directoryInUse(directory)
        }
        var code = injectedFailure()
        var written: Int64 = 0
        if code == nil {
            for chunk in chunks {
                code = chunk.withUnsafeBytes { fresh.write($0) }
                guard code == nil else { break }
                written += Int64(chunk.count)
            }
        }
        if code == nil, durability == .system { code = fresh.sync() }
        if code == nil, let renameFailure = folder.rename(temporary, to: DownloadJournal.fileName, replacing: true) {
            code = renameFailure.rawValue
        }
        if let code {
            fresh.close()
            folder.unlink(temporary)
            throw .cannotUseDirectory(directory, reason: "cannot rewrite \(path): \(SystemCall.errorText(code))")
        }
        descriptor.close()
        self.descriptor = fresh
        length = written
        isTorn = false
        // The new file is the journal now, but its name is on the disk only once the folder is
        // flushed: a power loss before would bring back the old one (or none), without the records
        // the caller then writes and syncs. So a flush that fails fails the rewrite, which is owed
        // again, and written (and the folder flushed) again before any later record.
        if durability == .system, let failure = folder.sync() {
            throw .cannotUseDirectory(
                directory, reason: "cannot sync the folder of \(path): \(SystemCall.errorText(failure))")
        }
    }

    /// Closes the journal, releasing the directory's lock. Only the first call acts.
    func close() {
        descriptor?.close()
        descriptor = nil
    }
}
