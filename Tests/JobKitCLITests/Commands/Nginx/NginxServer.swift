import Foundation
import JobKitTestSupport

/// Debian's nginx (`/usr/sbin/nginx`) serving a folder on a loopback port, with an access log in the format of
/// `jobkit serve --access-log` (`GET /NAME range=RANGE status=STATUS`). Tests that use it are skipped, with a
/// printed reason, where it is not installed.
final class NginxServer {
    static let path = "/usr/sbin/nginx"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }

    private var process = Process()
    let baseURL: URL

    /// Starts nginx serving `root`, logging to `accessLog`, each answer at most `limitRate` (nginx syntax, as
    /// `8m`; nil: no limit). Its own files go to `workDirectory`. With `tls`, it serves HTTPS with that
    /// certificate and offers HTTP/2 (ALPN), and each access log line ends with ` proto=HTTP/2.0` (or
    /// `HTTP/1.1`): nginx's `$server_protocol`. `directives` go into the server block as they are.
    init(
        root: URL, accessLog: URL, workDirectory: URL, limitRate: String? = nil,
        tls: (certificate: URL, key: URL)? = nil, directives: String = ""
    ) throws {
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        for _ in 0..<5 {
            // Below the system's ephemeral range (32768 and up): a port a test's connection is using
            // there makes nginx's bind fail.
            let port = Int.random(in: 20_000...32_000)
            let configuration = """
                \(getuid() == 0 ? "user root;" : "")
                worker_processes 1;
                daemon off;
                pid \(workDirectory.path)/nginx.pid;
                error_log \(workDirectory.path)/error.log;
                events { worker_connections 256; }
                http {
                    log_format jobkit '$request_method $uri range=$http_range status=$status\(tls == nil ? "" : " proto=$server_protocol")';
                    access_log \(accessLog.path) jobkit;
                    client_body_temp_path \(workDirectory.path);
                    proxy_temp_path \(workDirectory.path);
                    fastcgi_temp_path \(workDirectory.path);
                    uwsgi_temp_path \(workDirectory.path);
                    scgi_temp_path \(workDirectory.path);
                    sendfile on;
                    keepalive_requests 100000;
                    \(limitRate.map { "limit_rate \($0);" } ?? "")
                    server {
                        listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl http2");
                        \(tls.map { "ssl_certificate \($0.certificate.path); ssl_certificate_key \($0.key.path);" } ?? "")
                        root \(root.path);
                        \(directives)
                    }
                }
                """
            let file = workDirectory.appendingPathComponent("nginx-\(port).conf")
            try Data(configuration.utf8).write(to: file)
            process = Process()
            process.executableURL = URL(fileURLWithPath: Self.path)
            process.arguments = ["-c", file.path, "-p", workDirectory.path, "-e", "\(workDirectory.path)/error.log"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                lastError = error
                break
            }
            let url = URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/")!
            let deadline = ContinuousClock.now + safetyDeadline
            while process.isRunning, ContinuousClock.now < deadline {
                if Self.answers(url) {
                    baseURL = url
                    return
                }
                usleep(20_000)  // waiting for nginx to listen, not for an outcome
            }
            // Exited (its port was taken: another port next time), or silent until the deadline.
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
            let log = (try? String(contentsOfFile: "\(workDirectory.path)/error.log", encoding: .utf8)) ?? ""
            lastError = NginxError(message: "nginx did not listen on port \(port): \(log.suffix(500))")
        }
        throw lastError ?? NginxError(message: "nginx did not start")
    }

    /// Why nginx could not be started.
    struct NginxError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    private static func answers(_ url: URL) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(url.port ?? 80).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    deinit {
        if process.isRunning {
            process.terminate()  // SIGTERM: nginx's fast shutdown
            process.waitUntilExit()
        }
    }
}
