import Foundation
import Testing

/// Polls `condition` every 5 ms for up to 20 s.
package func eventually(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: @escaping @Sendable () -> Bool
) async {
    let deadline = Date().addingTimeInterval(20)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}
