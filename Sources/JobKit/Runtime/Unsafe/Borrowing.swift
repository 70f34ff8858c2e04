/// Calls `body` with `object` borrowed as it is: no retain and release around the call (BENCHMARKS.md,
/// "Unsafe code and what it saves"). The caller must hold `object` until `body` returns. On the safe
/// path (`JOBKIT_SAFE_RUNTIME`), `body` gets an ordinary strong reference.
@inline(__always)
func withBorrowed<Object: AnyObject, Result>(_ object: Object, _ body: (Object) -> Result) -> Result {
    #if JOBKIT_SAFE_RUNTIME
        body(object)
    #else
        Unmanaged.passUnretained(object)._withUnsafeGuaranteedRef(body)
    #endif
}

/// Calls `body` with the object `reference` points to, borrowed as it is (the same, for an object
/// kept unretained: a thread's slot). Whoever holds the object must hold it until `body` returns.
@inline(__always)
func withBorrowed<Object: AnyObject, Result>(_ reference: Unmanaged<Object>, _ body: (Object) -> Result) -> Result {
    #if JOBKIT_SAFE_RUNTIME
        body(reference.takeUnretainedValue())
    #else
        reference._withUnsafeGuaranteedRef(body)
    #endif
}

extension RunStorage {
    /// Calls a job's `body` with a controller of this run. The caller holds this storage, and the
    /// storage its queue, until the body returns: both go to the body as they are, with no retain and
    /// release around the call (a strong reference each on the safe path).
    @inline(__always)
    func call(_ body: RunBody) {
        #if JOBKIT_SAFE_RUNTIME
            body.call(RunController(storage: self, share: .whole, queue: queue))
        #else
            let queue = withUnsafeMutablePointerToElements { Unmanaged.passUnretained($0.pointee.queue) }
            Unmanaged.passUnretained(self)._withUnsafeGuaranteedRef { storage in
                queue._withUnsafeGuaranteedRef { queue in
                    body.call(RunController(storage: storage, share: .whole, queue: queue))
                }
            }
        #endif
    }
}
