/// The work waiting on one thread (`CompletionTrampoline`).
///
/// Its fields skip Swift's run-time exclusivity checks: a frame is only ever touched by its own
/// thread, and never through overlapping accesses (BENCHMARKS.md, "Unsafe code and what it saves").
/// On the safe path (`JOBKIT_SAFE_RUNTIME`) they are checked.
final class CompletionTrampolineFrame {
    #if JOBKIT_SAFE_RUNTIME
        var isDraining = false
        var isCancelling = false
        var completions: [() -> Void] = []
        var cancellations: [() -> Void] = []
        /// What cancelled runs deliver (their notices and completions): after every handler of the
        /// cascade has run.
        var cancelledDeliveries: [() -> Void] = []
        var isReleasing = false
        var releases: [Any] = []
    #else
        @exclusivity(unchecked) var isDraining = false
        @exclusivity(unchecked) var isCancelling = false
        @exclusivity(unchecked) var completions: [() -> Void] = []
        @exclusivity(unchecked) var cancellations: [() -> Void] = []
        /// What cancelled runs deliver (their notices and completions): after every handler of the
        /// cascade has run.
        @exclusivity(unchecked) var cancelledDeliveries: [() -> Void] = []
        @exclusivity(unchecked) var isReleasing = false
        @exclusivity(unchecked) var releases: [Any] = []
    #endif
}
