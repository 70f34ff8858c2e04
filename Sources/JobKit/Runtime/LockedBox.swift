#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

#if canImport(Darwin)
    /// The platform's cheapest mutex that the thread sanitizer understands: 4 bytes.
    typealias PlatformMutex = os_unfair_lock
#else
    import CJobKitLock

    /// The platform's cheapest mutex that the thread sanitizer understands: a 4-byte futex word
    /// (`CJobKitLock`), where glibc's `pthread_mutex_t` takes 40 bytes in every run.
    typealias PlatformMutex = UInt32
#endif

/// Thin, always-inlined wrappers over the platform mutex, used through a stable pointer.
enum MutexOps {
    @inline(__always)
    static func initialize(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
            mutex.initialize(to: os_unfair_lock())
        #else
            mutex.initialize(to: 0)
        #endif
    }

    @inline(__always)
    static func destroy(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        mutex.deinitialize(count: 1)
    }

    @inline(__always)
    static func lock(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
            os_unfair_lock_lock(mutex)
        #else
            jobkit_lock(mutex)
        #endif
    }

    @inline(__always)
    static func unlock(_ mutex: UnsafeMutablePointer<PlatformMutex>) {
        #if canImport(Darwin)
            os_unfair_lock_unlock(mutex)
        #else
            jobkit_unlock(mutex)
        #endif
    }
}

extension ManagedBuffer where Element == PlatformMutex {
    /// Runs `body` with exclusive access to the header. Never call user code, a queue or a
    /// continuation from `body`: compute an action, return it, and act after the lock is released.
    @inline(__always)
    final func withLock<Result>(_ body: (inout Header) throws -> Result) rethrows -> Result {
        try withUnsafeMutablePointers { header, mutex in
            MutexOps.lock(mutex)
            defer { MutexOps.unlock(mutex) }
            return try body(&header.pointee)
        }
    }
}

/// The storage of a `LockedBox`: the value and its mutex in one allocation.
final class LockStorage<State>: ManagedBuffer<State, PlatformMutex> {
    static func make(_ initial: State) -> LockStorage<State> {
        let buffer = create(minimumCapacity: 1) { _ in initial }
        buffer.withUnsafeMutablePointerToElements { MutexOps.initialize($0) }
        return buffer as! LockStorage<State>
    }

    deinit {
        withUnsafeMutablePointerToElements { MutexOps.destroy($0) }
    }
}

/// A value behind a mutex, in one allocation: the one lock type of every JobKit module.
package struct LockedBox<State> {
    let storage: LockStorage<State>

    package static func make(_ initial: State) -> LockedBox<State> {
        LockedBox(storage: .make(initial))
    }

    /// Runs `body` with exclusive access to the value. Never call user code, a queue or a
    /// continuation from `body`: compute an action, return it, and act after the lock is released.
    @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }
}

// Safety: the value is only reached through `withLock`, which holds the mutex, and is itself Sendable.
extension LockedBox: @unchecked Sendable where State: Sendable {}
