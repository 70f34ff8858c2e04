import JobKitTestSupport
import Testing

/// A pure state machine wrapped with a model of the code around it, as the explorer drives it: made
/// fresh for every sequence of inputs, fed them one at a time, its invariants checked after each.
///
/// Only values and objects made by the system itself may be touched: a system must not start work on
/// a queue, so that a sequence replays to the very same state.
protocol ExploredSystem {
    associatedtype Input: CustomStringConvertible
    associatedtype Fingerprint: Hashable

    /// The inputs that may arrive now.
    func enabledInputs() -> [Input]
    /// Applies one input, acts on what the machine decided, and returns every invariant that no
    /// longer holds (empty when all hold).
    mutating func apply(_ input: Input) -> [String]
    /// Everything that decides what the system does next and what its invariants check: two
    /// sequences that reach the same fingerprint have the same futures, so the second is not
    /// explored further.
    var fingerprint: Fingerprint { get }
}

/// Explores every sequence of a system's inputs up to a depth, breadth first (so the shortest
/// failing sequences are found first), skipping sequences that reach a state already explored.
///
/// Each sequence is replayed from a new system: the machines hold objects (runs, observers,
/// progress), which a copy would share.
struct StateSpaceExplorer {
    struct Violation {
        let sequence: [String]
        let messages: [String]
    }

    struct Report: CustomStringConvertible {
        /// Sequences applied (each one input longer than a state already explored).
        var sequences = 0
        /// Distinct fingerprints reached.
        var states = 0
        /// The longest sequence explored.
        var depth = 0
        var violations: [Violation] = []

        var description: String {
            "explored \(sequences) sequences (\(states) states, depth \(depth)): \(violations.count) violations"
        }

        static func + (lhs: Report, rhs: Report) -> Report {
            Report(
                sequences: lhs.sequences + rhs.sequences, states: lhs.states + rhs.states,
                depth: max(lhs.depth, rhs.depth), violations: lhs.violations + rhs.violations)
        }
    }

    /// Explores sequences of at most `depth` inputs of the systems `make` returns (two inputs fewer
    /// when `JOBKIT_TEST_SCALE_DOWN` is set: the thread sanitizer's run, several times slower).
    static func explore<System: ExploredSystem>(depth: Int, _ make: () -> System) -> Report {
        let depth = scaledForTheRun(2) < 2 ? depth - 2 : depth
        var report = Report()
        let initial = make()
        var seen: Set<System.Fingerprint> = [initial.fingerprint]
        // Each sequence to extend, with the inputs enabled at its end.
        var frontier: [(path: [System.Input], inputs: [System.Input])] = [([], initial.enabledInputs())]
        var level = 0
        while level < depth, !frontier.isEmpty {
            level += 1
            var next: [(path: [System.Input], inputs: [System.Input])] = []
            for (path, inputs) in frontier {
                for input in inputs {
                    var system = replay(path, make)
                    let messages = system.apply(input)
                    report.sequences += 1
                    report.depth = level
                    if !messages.isEmpty {
                        report.violations.append(
                            Violation(sequence: (path + [input]).map(\.description), messages: messages))
                    } else if seen.insert(system.fingerprint).inserted {
                        next.append((path + [input], system.enabledInputs()))
                    }
                }
            }
            frontier = next
        }
        report.states = seen.count
        return report
    }

    /// Prints the report's line and, on violations, the shortest failing sequences; records an issue
    /// for each violation (at most `shown` of them are printed in full).
    static func check(_ name: String, _ report: Report, shown: Int = 5) {
        print("\(name): \(report)")
        let shortestFirst = report.violations.sorted { $0.sequence.count < $1.sequence.count }
        for violation in shortestFirst.prefix(shown) {
            print("  [\(violation.sequence.joined(separator: ", "))]: \(violation.messages.joined(separator: "; "))")
        }
        if let first = shortestFirst.first {
            Issue.record(
                "\(name): \(report.violations.count) violations; the shortest: [\(first.sequence.joined(separator: ", "))]: \(first.messages.joined(separator: "; "))"
            )
        }
        #expect(report.sequences >= 1_000, "\(name): explore deeper")
    }

    private static func replay<System: ExploredSystem>(_ path: [System.Input], _ make: () -> System) -> System {
        var system = make()
        for input in path { _ = system.apply(input) }
        return system
    }
}
