import Foundation

/// The length of a test's long loops (a million levels deep, a million rounds): `count` itself, or
/// `count` divided by `JOBKIT_TEST_SCALE_DOWN` when that is an integer above 1.
///
/// CI's thread-sanitized run sets it: the sanitizer makes every level many times slower, and what it
/// looks for (a race) shows in the first thousands of levels as well as in the millionth. The plain run
/// keeps the full counts, which is where the stack depth and memory claims are checked. Loops that
/// measure memory growth against a fixed bound are not scaled.
package func scaledForTheRun(_ count: Int) -> Int {
    guard let text = ProcessInfo.processInfo.environment["JOBKIT_TEST_SCALE_DOWN"],
        let divisor = Int(text), divisor > 1
    else { return count }
    return max(count / divisor, 1)
}
