import Dispatch

extension Job {
    /// The body's side of a run: completes it, reports progress, and learns about cancellation.
    ///
    /// A controller is a cheap value; copy it into callbacks freely. Every method is safe from any
    /// thread. Only the first completion (`finish`, `fail(with:)` or `complete(with:)`) counts.
    public struct Controller: Sendable {
        /// Everything a controller holds, none of it typed by `Value`: its one stored property, so that
        /// a body is called alike for every value type (see `RunBody`).
        let base: RunController

        var run: Run<Value> {
            @inline(__always) get { Run(storage: base.storage) }
        }

        /// Maps the body's progress to the run's: the identity, except for a body that a chain handed
        /// its run over to (`handOver(to:share:)`), which owns only the chain's remaining share.
        var share: ProgressShare {
            @inline(__always) get { base.share }
        }

        /// The queue the run was started on. Groups and sequences start their members here.
        public var queue: DispatchQueue {
            @inline(__always) get { base.queue }
        }

        init(run: Run<Value>, queue: DispatchQueue, share: ProgressShare = .whole) {
            self.base = RunController(storage: run.storage, share: share, queue: queue)
        }

        /// Completes the run with `value`.
        public func finish(_ value: Value) {
            run.complete(with: .success(value))
        }

        /// Completes the run with `error`.
        public func fail(with error: any Error) {
            run.complete(with: .failure(error))
        }

        /// Completes the run with `result`.
        public func complete(with result: Result<Value, any Error>) {
            run.complete(with: result)
        }

        /// Completes the run on behalf of a combinator: a completion that loses a legitimate race (to a
        /// timeout, a cancellation, a faster member) is dropped silently.
        func resolve(_ result: Result<Value, any Error>) {
            run.complete(with: result, fromBody: false)
        }

        /// Reports how far the run has come, as a fraction in `0...1`. Values are clamped; a value
        /// lower than the last one is ignored, so progress never goes back.
        public func report(progress fraction: Double) {
            run.report(progress: share.map(fraction))
        }

        /// Whether the run has been cancelled. Long bodies can poll this between steps.
        public var isCancelled: Bool {
            run.isCancelled
        }

        /// Registers `handler` to run once if the run is cancelled.
        ///
        /// If the run is already cancelled, `handler` runs synchronously before this method returns.
        /// Handlers run in registration order, on the thread that cancelled, with no lock held; they are
        /// released without running when the run completes normally.
        public func onCancel(_ handler: @escaping @Sendable () -> Void) {
            run.onCancel(handler)
        }

        /// Lets `job`'s body complete this run, as a tail call: the caller keeps nothing for it, so
        /// a recursive composition (`func page(n) { fetch(n).then { page(n + 1) } }`) holds one level
        /// of state, not one per level. The body runs on this run's queue, unless the run is
        /// cancelled first; `share` is the part of this run's progress it reports into.
        func handOver(to job: Job<Value>, share: ProgressShare) {
            let controller = Controller(run: run, queue: queue, share: self.share.then(share))
            queue.async {
                guard !controller.isCancelled else { return }
                job.callBody(controller)
            }
        }
    }
}

/// An affine map of a part's progress into its whole's: `offset + scale × fraction`. Affine maps
/// compose into one, so a tail call a million levels deep still maps in two numbers.
struct ProgressShare: Sendable {
    static let whole = ProgressShare(offset: 0, scale: 1)

    let offset: Double
    let scale: Double

    @inline(__always)
    func map(_ fraction: Double) -> Double {
        offset + scale * fraction
    }

    /// `inner` applied first, then this map.
    func then(_ inner: ProgressShare) -> ProgressShare {
        ProgressShare(offset: offset + scale * inner.offset, scale: scale * inner.scale)
    }
}

extension Job.Controller where Value == Void {
    /// Completes the run successfully.
    public func finish() {
        run.complete(with: .success(()))
    }
}
