import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers the authentication challenges of a `TransferClient`'s requests (HTTP auth, server trust,
/// certificate pinning).
///
/// Called on the client's delegate queue, once per challenge; `completionHandler` must be called
/// exactly once, from any thread. Answer quickly, and never call a `URLSessionTask`'s `resume()`,
/// `suspend()` or `cancel()` from the callback itself: every transfer of the client waits for this
/// queue. The client keeps its delegate for its own lifetime.
public protocol TransferClientDelegate: AnyObject, Sendable {
    /// Decides how to answer `challenge`, met while loading `url` (nil for a session-wide challenge).
    func transferClient(
        _ client: TransferClient, didReceive challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
}
