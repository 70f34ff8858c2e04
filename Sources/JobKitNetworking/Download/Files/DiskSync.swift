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

    /// Flushes `descriptor`, open on `path`, to disk; true when that worked.
    static func sync(_ descriptor: Int32, path: String) -> Bool {
        recorded.withLock { $0?.append(path) }
        return fsync(descriptor) == 0
    }
}
