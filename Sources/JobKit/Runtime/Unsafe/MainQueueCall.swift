/// A `@MainActor` handler that JobKit calls on the main queue (the main actor's executor), typed as a
/// nonisolated one for the delivery code, which is not isolated: the same function value,
/// reinterpreted — no closure made around it, nothing allocated, no isolation checked per call
/// (BENCHMARKS.md, "Unsafe code and what it saves"). Hand the result only to a delivery on `.main`.
///
/// On the safe path (`JOBKIT_SAFE_RUNTIME`) the handler is wrapped in a closure that asserts the
/// isolation it runs in (`MainActor.assumeIsolated`): a closure per handler and a check per call.
package enum MainQueueCall {
    /// `handler`, typed nonisolated: call it only on the main queue.
    @inline(__always)
    package static func nonisolated<Argument: Sendable>(_ handler: @escaping @MainActor @Sendable (Argument) -> Void)
        -> @Sendable (Argument) -> Void
    {
        #if JOBKIT_SAFE_RUNTIME
            { argument in MainActor.assumeIsolated { handler(argument) } }
        #else
            // Safety: a function value's representation does not depend on its global actor (a code
            // pointer and a context either way); both structs hold a function of the same signature,
            // at the same abstraction, otherwise. The result is called only on the main queue.
            unsafeBitCast(Isolated(call: handler), to: Nonisolated<Argument>.self).call
        #endif
    }

    /// `handler` of two arguments, typed nonisolated: call it only on the main queue.
    @inline(__always)
    package static func nonisolated<First: Sendable, Second: Sendable>(
        _ handler: @escaping @MainActor @Sendable (First, Second) -> Void
    ) -> @Sendable (First, Second) -> Void {
        let pair = nonisolated { (arguments: (First, Second)) in handler(arguments.0, arguments.1) }
        return { first, second in pair((first, second)) }
    }

    /// `handler` of no argument, typed nonisolated: call it only on the main queue.
    @inline(__always)
    package static func nonisolated(_ handler: @escaping @MainActor @Sendable () -> Void) -> @Sendable () -> Void {
        let unary = nonisolated { (_: Void) in handler() }
        return { unary(()) }
    }

    private struct Isolated<Argument: Sendable> {
        let call: @MainActor @Sendable (Argument) -> Void
    }

    private struct Nonisolated<Argument: Sendable> {
        let call: @Sendable (Argument) -> Void
    }
}
