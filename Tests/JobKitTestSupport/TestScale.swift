import Foundation

/// The length of a test's long loops (a million levels deep, a million rounds): `count` itself, or
/// `count` divided by `JOBKIT_TEST_SCALE_DOWN` when that is an integer above 1.
///
/// CI sets 10, to stay within its time: a hundred thousand levels overflow any thread's stack as surely
/// as a million, and what the sanitizer looks for (a race) shows in the first thousands of levels as well
/// as in the millionth. The README's `swift test` sets nothing and runs the full counts. Loops that
/// measure memory growth against a fixed bound are not scaled.
package func scaledForTheRun(_ count: Int) -> Int {
    guard let text = ProcessInfo.processInfo.environment["JOBKIT_TEST_SCALE_DOWN"],
        let divisor = Int(text), divisor > 1
    else { return count }
    return max(count / divisor, 1)
}
