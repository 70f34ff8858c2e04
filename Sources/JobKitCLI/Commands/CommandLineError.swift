import ArgumentParser
import Foundation
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How `jobkit` reports a failure: one line on standard error, `error: WHAT: WHY`, naming the file, URL or
/// port, and an exit code that says what kind of failure it was. Never an `NSError` dump.
///
/// Exit codes:
/// - 0: done;
/// - 1: the work failed (a port that cannot be bound, a root that cannot be used, a server that fails, a
///   transfer that failed);
/// - 64: the command line is wrong (ArgumentParser's usage errors, an input file that cannot be parsed);
/// - 130: stopped by Ctrl-C (SIGINT), cleanly — 128 + the signal's number, as shells report it.
///
/// ```swift
/// do { try work() } catch { throw CommandLineError.report(error) }
/// ```
enum CommandLineError {
    /// The exit code of a failure of the work itself.
    static let failure = ExitCode(1)
    /// The exit code of a wrong command line (`EX_USAGE`).
    static let usage = ExitCode(64)
    /// The exit code after Ctrl-C stopped the work cleanly.
    static let interrupted = ExitCode(130)

    /// Prints `error: …` for a usage problem found after parsing (an input file's line, say), the secrets of
    /// the URLs in it hidden, and returns 64.
    static func usage(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(SecretRedaction.redact(message))\n".utf8))
        return usage
    }

    /// Prints `error: …` for `error` on standard error and returns the exit code to throw.
    static func report(_ error: any Error) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(describe(error))\n".utf8))
        return failure
    }

    /// One line that names what failed and why, with the secrets of the URLs in it hidden (`SecretRedaction`).
    static func describe(_ error: any Error) -> String {
        let text: String
        if let error = error as? URLError {
            let url = error.failingURL?.redactedString ?? "the server"
            text = "\(url): \(reason(of: error))"
        } else if let error = error as? CocoaError {
            let path = error.filePath ?? error.url?.path
            text = path.map { "\($0): \(reason(of: error))" } ?? reason(of: error)
        } else if let error = error as? any LocalizedError, let description = error.errorDescription {
            text = description
        } else if let error = error as? POSIXError {
            text = systemReason(error.code.rawValue)
        } else {
            text = String(describing: error)
        }
        return SecretRedaction.redact(text.split(whereSeparator: \.isNewline).joined(separator: " "))
    }

    /// The system's reason inside a Foundation error: "no such file or directory", "connection refused".
    static func reason(of error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain
        {
            return systemReason(Int32(underlying.code))
        }
        if nsError.domain == NSPOSIXErrorDomain { return systemReason(Int32(nsError.code)) }
        if let error = error as? URLError {
            switch error.code {
            case .cannotConnectToHost: return "connection refused"
            case .timedOut: return "timed out"
            case .cannotFindHost: return "unknown host"
            case .notConnectedToInternet, .networkConnectionLost: return "the connection was lost"
            default: return "request failed (URLError \(error.code.rawValue))"
            }
        }
        if let error = error as? CocoaError {
            switch error.code {
            case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or directory"
            case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
            case .fileReadCorruptFile: return "the data is corrupt"
            case .fileWriteOutOfSpace: return "no space left on device"
            case .fileWriteFileExists: return "a file is in the way"
            default: return "file error \(error.code.rawValue)"
            }
        }
        return nsError.localizedDescription
    }

    /// `strerror`, starting in lower case as the rest of the line.
    static func systemReason(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        let reason = String(cString: text)
        return reason.prefix(1).lowercased() + reason.dropFirst()
    }
}
