import Dispatch

#if !JOBKIT_SAFE_RUNTIME && !canImport(Darwin) && canImport(CDispatch)
    import CDispatch
#endif

/// Starts a run's body on its queue.
///
/// On Linux a run is handed to `dispatch_async_f` as the context of a plain C function: GCD's own
/// continuation is then the only allocation, with no block to copy and free (BENCHMARKS.md, "Unsafe
/// code and what it saves"). Elsewhere, on the safe path (`JOBKIT_SAFE_RUNTIME`), and whenever the C
/// queue cannot be read safely, the run goes through `DispatchQueue.async`.
enum RunDispatch {
    @inline(__always)
    static func start(_ storage: consuming RunStorage) {
        #if !JOBKIT_SAFE_RUNTIME && !canImport(Darwin) && canImport(CDispatch)
            // Read without a retain: the storage holds its queue.
            let unretained = storage.withUnsafeMutablePointerToElements { Unmanaged.passUnretained($0.pointee.queue) }
            if let handle = unretained._withUnsafeGuaranteedRef({ DispatchQueueHandle.handle(of: $0) }) {
                // The context owns the caller's reference, which `runStoredBody` takes back: retained
                // here and released before the call, the pair cancels out.
                let context = Unmanaged.passRetained(storage).toOpaque()
                _ = consume storage
                dispatch_async_f(handle, context, runStoredBody)
                return
            }
        #endif
        let queue = storage.queue
        // Safety: as for `Run` (the storage is what makes a run Sendable). Captured bare, the storage
        // is the closure's whole context: no box is allocated for it.
        nonisolated(unsafe) let storage = storage
        queue.async { storage.runBody() }
    }
}

#if !JOBKIT_SAFE_RUNTIME && !canImport(Darwin) && canImport(CDispatch)
    /// The C function GCD calls with a run's storage (retained once by `RunDispatch.start`).
    private func runStoredBody(_ context: UnsafeMutableRawPointer?) {
        guard let context else { return }
        Unmanaged<RunStorage>.fromOpaque(context).takeRetainedValue().runBody()
    }

    /// The C queue inside a `DispatchQueue` of Swift's Dispatch on Linux.
    ///
    /// The wrapper does not expose it: its only stored property is the C queue, right after the object
    /// header. That is checked once, against the C default global queue, before it is relied on; if
    /// the check fails (another Dispatch), `handle(of:)` returns nil and runs go through blocks.
    enum DispatchQueueHandle {
        private static let offset = 2 * MemoryLayout<Int>.size

        /// Whether the wrapper's layout is the expected one.
        static let isVerified: Bool = {
            let wrapper = DispatchQueue.global()
            return withExtendedLifetime(wrapper) {
                unchecked(wrapper) == dispatch_get_global_queue(Int(DISPATCH_QUEUE_PRIORITY_DEFAULT), 0)
            }
        }()

        @inline(__always)
        static func handle(of queue: DispatchQueue) -> dispatch_queue_t? {
            isVerified ? unchecked(queue) : nil
        }

        @inline(__always)
        private static func unchecked(_ queue: DispatchQueue) -> dispatch_queue_t {
            Unmanaged.passUnretained(queue).toOpaque().load(fromByteOffset: offset, as: dispatch_queue_t.self)
        }
    }
#endif
