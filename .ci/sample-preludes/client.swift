// Stand-ins for the README's client sample: a token, a delegate that answers challenges, the files.
import Foundation
import JobKitNetworking

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let token = "secret"
let urls = [URL(string: "http://127.0.0.1:8080/files/a.bin")!]
let folder = FileManager.default.temporaryDirectory

final class Pinning: TransferClientDelegate {
    func transferClient(
        _ client: TransferClient, didReceive challenge: URLAuthenticationChallenge, loading url: URL?,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }
}

let pinning = Pinning()
