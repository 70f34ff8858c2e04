import AsyncHTTPClient
import Foundation
import JobKitNetworking
import NIOSSL

/// What `jobkit download`'s network options ask of its manager: speed limits, the certificate
/// authorities trusted besides the system's, and the HTTP version.
struct DownloadNetworkSettings {
    /// `--max-overall-download-limit`: all downloads together; nil: none.
    var overallLimit: Int64?
    /// `--max-download-limit`: each download, unless its input file entry says otherwise; nil: none.
    var itemLimit: Int64?
    /// `--ca-certificate`: the certificates of the file, trusted besides the system's.
    var caCertificates: [NIOSSLCertificate] = []
    /// `--http1.1`: never HTTP/2.
    var http1Only = false
    /// `-x`: the connections of each download, unless its input file entry says otherwise (`split=`).
    var connections = 1

    /// The PEM certificates in the file at `path`, or why they cannot be used (a usage error).
    static func certificates(at path: String) throws(DownloadPlan.Problem) -> [NIOSSLCertificate] {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw DownloadPlan.Problem(message: "--ca-certificate \(path): no such readable file")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw DownloadPlan.Problem(message: "--ca-certificate \(path): not PEM certificates (\(error))")
        }
        guard !certificates.isEmpty else {
            throw DownloadPlan.Problem(message: "--ca-certificate \(path): holds no PEM certificate")
        }
        return certificates
    }

    /// Puts the settings into `configuration`.
    func apply(to configuration: inout DownloadManager.Configuration) {
        configuration.maxBytesPerSecond = overallLimit
        if http1Only { configuration.httpVersion = .http1Only }
        if !caCertificates.isEmpty {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.certificates(caCertificates)]
            configuration.tlsConfiguration = tls
        }
    }
}
