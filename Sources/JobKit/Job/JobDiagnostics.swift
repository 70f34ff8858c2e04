import Foundation

/// Reports misuse of the job contract in debug builds — never a crash.
///
/// **Threading.** `addHandler` and `removeHandler` may be called from any thread. A handler is called on the
/// thread that completed the run a second time, with no lock held: keep it thread-safe and cheap.
///
/// Today one misuse is detected: a body that completes its run twice (`finish` after `finish`,
/// `fail` after `finish`, …). The first outcome always stands and the second is ignored; in debug
/// builds the second is also reported, once per run, to every installed handler. With no handler
/// installed, the first event of the process is written to standard error, and the later ones are
/// only counted (`eventCount`): a bug that repeats a million times prints one line, not a million.
/// Release builds report nothing.
///
/// ```swift
/// let token = JobDiagnostics.addHandler { event in logger.warning("\(event)") }
/// defer { JobDiagnostics.removeHandler(token) }
/// ```
public enum JobDiagnostics {
    /// A detected misuse.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        /// What went wrong.
        public enum Kind: Sendable, Equatable {
            /// The body called `finish`, `fail` or `complete` after its run had already completed.
            case completedTwice
        }

        /// What kind of misuse it was.
        public let kind: Kind
        /// The run it happened in; equal to `JobHandle.id` of that run.
        public let runID: ObjectIdentifier

        public var description: String {
            switch kind {
            case .completedTwice:
                "JobKit: a job completed twice; the second finish/fail was ignored (the first outcome stands)"
            }
        }
    }

    /// Identifies an installed handler, for `removeHandler(_:)`.
    public struct Token: Sendable, Hashable {
        fileprivate let value: UInt64
    }

    private struct Registry {
        var nextToken: UInt64 = 0
        var handlers: [UInt64: @Sendable (Event) -> Void] = [:]
        var eventCount = 0
    }

    /// How many misuse events this process has detected so far (debug builds), handled or not.
    public static var eventCount: Int {
        registry.withLock { $0.eventCount }
    }

    private static let registry = LockedBox.make(Registry())

    /// Installs `handler`, called synchronously on the thread that detected the misuse, with no lock
    /// held. It is retained until removed.
    @discardableResult
    public static func addHandler(_ handler: @escaping @Sendable (Event) -> Void) -> Token {
        registry.withLock { registry in
            registry.nextToken += 1
            registry.handlers[registry.nextToken] = handler
            return Token(value: registry.nextToken)
        }
    }

    /// Removes a handler installed by `addHandler(_:)`.
    public static func removeHandler(_ token: Token) {
        registry.withLock { _ = $0.handlers.removeValue(forKey: token.value) }
    }

    static func report(_ kind: Event.Kind, runID: ObjectIdentifier) {
        #if DEBUG
            let event = Event(kind: kind, runID: runID)
            let (handlers, count) = registry.withLock { registry in
                registry.eventCount += 1
                return (Array(registry.handlers.values), registry.eventCount)
            }
            if !handlers.isEmpty {
                for handler in handlers { handler(event) }
            } else if count == 1 {
                let note = "reported once per process; JobDiagnostics.eventCount counts them all"
                FileHandle.standardError.write(Data("\(event) (\(note))\n".utf8))
            }
        #endif
    }
}
