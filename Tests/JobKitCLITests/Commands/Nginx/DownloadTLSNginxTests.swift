import Foundation
import JobKitTestSupport
import Testing

/// `jobkit download` over HTTPS from Debian's nginx with `http2`, its certificate signed by a private CA the
/// test makes with `openssl` — skipped, with the reason printed, where nginx or openssl is not installed.
@Suite(
    .timeLimit(.minutes(10)),
    .enabled(if: NginxServer.isInstalled, "nginx is not installed at /usr/sbin/nginx (apt-get install nginx)"),
    .enabled(if: TestCertificates.isInstalled, "openssl is not installed at /usr/bin/openssl (apt-get install openssl)")
)
struct DownloadTLSNginxTests {
    /// A fixture with files, a CA, and nginx serving them over HTTPS with HTTP/2.
    private func start(directives: String = "") async throws -> (
        DownloadFixture, TestCertificates, NginxServer, [String]
    ) {
        let fixture = try DownloadFixture()
        let folder = fixture.folder.appendingPathComponent("tls")
        let certificates = try await offThePool { Result { try TestCertificates.make(in: folder) } }.get()
        let names = try fixture.make("tls", count: 3) { 100_000 + $0 * (1 << 20) }
        let nginx = try NginxServer(
            root: fixture.files, accessLog: fixture.accessLog,
            workDirectory: fixture.folder.appendingPathComponent("nginx"),
            tls: (certificates.certificate, certificates.key), directives: directives)
        return (fixture, certificates, nginx, names)
    }

    @Test func httpsNegotiatesHTTP2ByDefaultWithTheCATrustedThroughCACertificate() async throws {
        let (fixture, certificates, nginx, names) = try await start()
        defer { fixture.cleanUp() }
        let list = try fixture.inputFile(names, base: nginx.baseURL)
        let output = try await runProduct(
            "jobkit",
            arguments: [
                "download", "-i", list.path, "-o", fixture.output.path, "--quiet",
                "--ca-certificate", certificates.authority.path,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(names.allSatisfy(fixture.arrived))
        let requests = fixture.requests()
        #expect(requests.count == names.count)
        #expect(requests.allSatisfy { $0.hasSuffix("status=200 proto=HTTP/2.0") }, "\(requests)")
        withExtendedLifetime(nginx) {}
    }

    /// `--content-disposition` asks for the server's names through the same trust and HTTP version as
    /// the downloads: with the private CA, the name comes back at once.
    @Test func contentDispositionProbesThroughTheTrustedCA() async throws {
        let (fixture, certificates, nginx, names) = try await start(
            directives: #"add_header Content-Disposition 'attachment; filename="suggested.bin"';"#)
        defer { fixture.cleanUp() }
        let output = try await runProduct(
            "jobkit",
            arguments: [
                "download", "-o", fixture.output.path, "--quiet", "--content-disposition", "--http1.1",
                "--ca-certificate", certificates.authority.path,
                nginx.baseURL.appendingPathComponent(names[0]).absoluteString,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(FileManager.default.fileExists(atPath: fixture.output.appendingPathComponent("suggested.bin").path))
        #expect(fixture.requests().allSatisfy { $0.hasSuffix("proto=HTTP/1.1") }, "\(fixture.requests())")
        withExtendedLifetime(nginx) {}
    }

    @Test func http1_1SpeaksHTTP1OverTLS() async throws {
        let (fixture, certificates, nginx, names) = try await start()
        defer { fixture.cleanUp() }
        let list = try fixture.inputFile(names, base: nginx.baseURL)
        let output = try await runProduct(
            "jobkit",
            arguments: [
                "download", "-i", list.path, "-o", fixture.output.path, "--quiet", "--http1.1",
                "--ca-certificate", certificates.authority.path,
            ])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(names.allSatisfy(fixture.arrived))
        let requests = fixture.requests()
        #expect(requests.count == names.count)
        #expect(requests.allSatisfy { $0.hasSuffix("status=200 proto=HTTP/1.1") }, "\(requests)")
        withExtendedLifetime(nginx) {}
    }

    /// Without the CA, the certificate is not trusted: each file fails, named, with why — at once, not
    /// retried — and nginx never sees a request.
    @Test func anUntrustedCertificateFailsWithAClearError() async throws {
        let (fixture, _, nginx, names) = try await start()
        defer { fixture.cleanUp() }
        let url = nginx.baseURL.appendingPathComponent(names[0])
        let output = try await runProduct(
            "jobkit", arguments: ["download", url.absoluteString, "-o", fixture.output.path])
        #expect(output.status == 1, "\(output.stderr)")
        #expect(output.stderr.contains("certificate is not trusted"), "\(output.stderr)")
        #expect(output.stderr.contains(names[0]), "\(output.stderr)")
        #expect(fixture.requests().isEmpty)
        #expect(!fixture.arrived(names[0]))
    }

    @Test func aCACertificateThatCannotBeReadIsAUsageError() async throws {
        let fixture = try DownloadFixture()
        defer { fixture.cleanUp() }
        let notPEM = fixture.folder.appendingPathComponent("not.pem")
        try Data("hello\n".utf8).write(to: notPEM)
        for (file, reason) in [(notPEM.path, "not PEM"), ("/nonexistent/ca.pem", "no such readable file")] {
            let output = try await runProduct(
                "jobkit",
                arguments: ["download", "https://127.0.0.1:1/x", "-o", fixture.output.path, "--ca-certificate", file])
            #expect(output.status == 64, "\(output.stderr)")
            #expect(output.stderr.contains("--ca-certificate \(file)"), "\(output.stderr)")
            #expect(output.stderr.contains(reason), "\(output.stderr)")
        }
    }
}
