import Dispatch
import Foundation
import JobKit
import JobKitTestSupport
import Testing

@testable import JobKitNetworking

/// A configuration for tests: fast progress, no retry wait (a manager given `resultQueue: log.queue`
/// delivers on the log's private queue).
func testConfiguration(
    _ log: UpdateLog, maxConcurrent: Int = 4, maxPerHost: Int? = nil, retry: DownloadManager.RetryPolicy = .none
) -> DownloadManager.Configuration {
    var configuration = DownloadManager.Configuration(
        maxConcurrent: maxConcurrent, maxPerHost: maxPerHost, retry: retry, progressInterval: .milliseconds(20))
    // The tests hold answers back on purpose, for as long as a loaded machine takes to get to the
    // next step: the server's silence is theirs, never a timeout (ReadSilenceTests check the limit).
    configuration.readSilenceLimit = .seconds(3600)
    return configuration
}

extension DownloadManager.State {
    var isFailed: Bool {
        if case .failed = self { return true }
        return false
    }

    var failure: DownloadManager.ItemError? {
        if case .failed(let failure) = self { return failure }
        return nil
    }
}

/// Deterministic bytes, different for each `seed` and in each 64 KiB block (a block written at the
/// wrong offset shows), made quickly even in a debug build.
func largePattern(_ count: Int, seed: Int) -> Data {
    var data = Data(capacity: count)
    var index: UInt64 = 0
    while data.count < count {
        var header = (UInt64(truncatingIfNeeded: seed) << 32 | index).bigEndian
        withUnsafeBytes(of: &header) { data.append(contentsOf: $0) }
        data.append(patternBlock.prefix(min(patternBlock.count, count - data.count)))
        index += 1
    }
    return data.prefix(count)
}

private let patternBlock = pattern(65_528, seed: 7)
