import Foundation

/// A private certificate authority and a server certificate it signed for `127.0.0.1` and `localhost`,
/// made with Debian's `openssl` in a folder, for HTTPS tests. Tests that need it are skipped, with a
/// printed reason, where `openssl` is not installed.
package struct TestCertificates: Sendable {
    package static let openssl = "/usr/bin/openssl"
    package static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    /// The authority's certificate (PEM): what a client trusts.
    package let authority: URL
    /// The server's certificate (PEM) and its private key.
    package let certificate: URL
    package let key: URL

    /// Makes the authority and the server certificate in `folder` (created if missing), valid for two days.
    /// Runs `openssl` and waits for it: call it off the cooperative pool (`offThePool`).
    package static func make(in folder: URL) throws -> TestCertificates {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(
            ["req", "-x509"] + curve + [
                "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=JobKit Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ])
        try run(
            ["req"] + curve + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try Data(
            """
            subjectAltName=IP:127.0.0.1,DNS:localhost
            basicConstraints=CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """.utf8
        ).write(to: folder.appendingPathComponent("server.ext"))
        try run([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext"),
        ])
        return TestCertificates(
            authority: folder.appendingPathComponent("ca.pem"),
            certificate: folder.appendingPathComponent("server.pem"),
            key: folder.appendingPathComponent("server.key"))
    }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments[0]) failed"])
        }
    }
}
