import JobKitNetworking
import Logging

/// A log handler that hides secrets before another handler writes the line: its message, its metadata (the
/// logger's own and the line's) and its error go through `SecretRedaction`, so no signature, token,
/// password or credential header reaches the log — also from the lines AsyncHTTPClient logs to the logger it
/// is given (at trace, whole HTTP heads, a redirect's `Location` among them).
struct RedactingLogHandler: LogHandler {
    /// The handler that writes the redacted lines.
    private var wrapped: any LogHandler

    init(_ wrapped: any LogHandler) {
        self.wrapped = wrapped
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue.mapValues(Self.redact) }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue.map(Self.redact) }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: SecretRedaction.redact(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.redact)
        if let error = event.error { event.error = RedactedError(description: SecretRedaction.redact("\(error)")) }
        wrapped.log(event: event)
    }

    /// `value` with the secrets of its text hidden, arrays and dictionaries through.
    static func redact(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(SecretRedaction.redact(text))
        case .stringConvertible(let convertible): .string(SecretRedaction.redact(convertible.description))
        case .array(let values): .array(values.map(redact))
        case .dictionary(let values): .dictionary(values.mapValues(redact))
        }
    }

    /// An error whose secrets were hidden: only its description is left.
    private struct RedactedError: Error, CustomStringConvertible {
        var description: String
    }
}
