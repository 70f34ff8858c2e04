/// What a combinator is made of — the jobs it wraps — held so that it is released iteratively.
///
/// A combinator's body captures its inner jobs; a job wrapped 200,000 times (`j = j.mapError { … }`
/// in a loop) is a nest of closure contexts that Swift would release recursively, one stack frame
/// set per level. Each combinator captures a `Nested` instead, whose `deinit` hands the inner jobs
/// to `CompletionTrampoline.release`, which drops them in a loop.
// Safety: `storage` is written only by `init` and by `deinit`, when this object has a single owner;
// `value` only reads it.
final class Nested<Payload: Sendable>: @unchecked Sendable {
    #if JOBKIT_SAFE_RUNTIME
        private var storage: Payload?
    #else
        /// Unchecked: read on every member launch, written only when there is a single owner (above)
        /// (BENCHMARKS.md, "Unsafe code and what it saves").
        @exclusivity(unchecked) private var storage: Payload?
    #endif

    init(_ payload: Payload) {
        storage = payload
    }

    var value: Payload {
        // Set from `init` until `deinit`.
        storage!
    }

    deinit {
        // An rvalue: moved into the release loop, with no local copy left to release afterwards.
        CompletionTrampoline.release(storage.take() as Any)
    }
}
