import Foundation
import Testing

/// Polls `condition` every 5 ms until it holds; after `timeout` (default `safetyDeadline`) records an
/// issue naming `what`.
package func eventually(
    _ what: String, timeout: Duration = safetyDeadline, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @escaping @Sendable () -> Bool
) async {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}
