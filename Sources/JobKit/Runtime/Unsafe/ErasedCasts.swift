/// The unchecked casts that keep a run's storage one non-generic class: a job's body and a run's
/// completion handler are kept without their value type and cast back, bit for bit, where the value
/// type is known again (BENCHMARKS.md, "Unsafe code and what it saves").
///
/// On the safe path (`JOBKIT_SAFE_RUNTIME`) a job's body is wrapped in a closure per job, and a
/// completion's handler boxed in an object of its own type and cast back by `as!`.
enum ErasedCasts {
    /// A job's body, erased: a struct holding the body cast to a struct holding a function value of
    /// another signature (a function value is a code pointer and a reference-counted context,
    /// whatever its signature; a function value cast directly would be re-abstracted through
    /// allocated thunks).
    @inline(__always)
    static func body<Value: Sendable>(_ body: @escaping @Sendable (Job<Value>.Controller) -> Void) -> RunBody {
        #if JOBKIT_SAFE_RUNTIME
            RunBody(call: { base in
                body(Job<Value>.Controller(run: Run(storage: base.storage), queue: base.queue, share: base.share))
            })
        #else
            unsafeBitCast(TypedBody(call: body), to: RunBody.self)
        #endif
    }

    /// A completion's handler, erased.
    @inline(__always)
    static func handler<Value: Sendable>(_ handler: @escaping @Sendable (Result<Value, any Error>) -> Void)
        -> ErasedRunCompletion.Handler
    {
        #if JOBKIT_SAFE_RUNTIME
            ErasedRunCompletion.Handler(box: HandlerBox(call: handler))
        #else
            unsafeBitCast(TypedHandler(call: handler), to: ErasedRunCompletion.Handler.self)
        #endif
    }

    /// The handler `handler(_:)` erased, typed again: called only with the `Value` it was made for.
    @inline(__always)
    static func handler<Value: Sendable>(_ handler: ErasedRunCompletion.Handler, of _: Value.Type)
        -> @Sendable (Result<Value, any Error>) -> Void
    {
        #if JOBKIT_SAFE_RUNTIME
            (handler.box as! HandlerBox<Value>).call
        #else
            unsafeBitCast(handler, to: TypedHandler<Value>.self).call
        #endif
    }

    #if JOBKIT_SAFE_RUNTIME
        /// A handler in an object of its own type, for a checked cast back.
        private final class HandlerBox<Value: Sendable>: Sendable {
            let call: @Sendable (Result<Value, any Error>) -> Void

            init(call: @escaping @Sendable (Result<Value, any Error>) -> Void) {
                self.call = call
            }
        }
    #else
        private struct TypedBody<Value: Sendable> {
            let call: @Sendable (Job<Value>.Controller) -> Void
        }

        private struct TypedHandler<Value> {
            let call: @Sendable (Result<Value, any Error>) -> Void
        }
    #endif
}

extension ErasedRunCompletion {
    /// A handler of some `Result<Value, any Error>`, never called as this type (`ErasedCasts`).
    struct Handler {
        #if JOBKIT_SAFE_RUNTIME
            let box: AnyObject
        #else
            let opaque: @Sendable () -> Void
        #endif
    }
}
