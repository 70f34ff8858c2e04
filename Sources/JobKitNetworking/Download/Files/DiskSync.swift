import JobKit

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Every `fsync` of the downloads and the journal goes through here, so that a test can see which
/// paths were flushed (and that `.process` durability flushes none).
enum DiskSync {
    /// The paths flushed since a test started recording; nil (the default): nothing is recorded.
    static let recorded = LockedBox<[String]?>.make(nil)
    /// Called with each path just before it is flushed, on the flushing thread (with whatever lock
    /// the flush holds), so that a test acts in the middle of a finalize; nil (the default): nothing.
    static let beforeSync = LockedBox<(@Sendable (_ path: String) -> Void)?>.make(nil)

    /// Flushes `descriptor`, open on `path`, to disk; true when that worked.
    static func sync(_ descriptor: Int32, path: String) -> Bool {
        recorded.withLock { $0?.append(path) }
        if let hook = beforeSync.withLock({ $0 }) { hook(path) }
        return fsync(descriptor) == 0
    }
}
