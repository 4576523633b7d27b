import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real nginx (Debian's `/usr/sbin/nginx`) serving a directory on 127.0.0.1, optionally over
/// TLS with HTTP/2. It is the reference server: what mprobe must do well against in production.
///
/// Runs in the foreground as a single process (`daemon off; master_process off;`) so it works
/// as root and non-root, needs no system directories, and dies with a plain SIGTERM.
public final class NginxServer: @unchecked Sendable {
    // Immutable after init, except `process`, which only `stop()` touches under `lock`.
    public static let executablePath = "/usr/sbin/nginx"

    public let port: Int
    public let root: String
    public let tls: TLSMaterial?
    /// The access log file (custom format, unbuffered so lines appear as requests complete).
    public let accessLogPath: String
    /// nginx's own stderr, kept for error messages.
    public let errorLogPath: String

    private let workDir: TempDirectory
    private let process: Process
    private let lock = NSLock()
    private var stopped = false

    public var baseURL: String {
        tls == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)"
    }

    /// `path` is appended to `baseURL`; pass it with its leading slash.
    public func url(_ path: String) -> String {
        baseURL + (path.hasPrefix("/") ? path : "/" + path)
    }

    /// Starts nginx serving `root` and returns once it is listening.
    /// - Parameter http2: with TLS, also offer HTTP/2 via ALPN. Ignored without TLS, because
    ///   nginx's cleartext `http2` listener would refuse ordinary HTTP/1.1 clients.
    /// - Parameter locations: extra `location` blocks for the server (e.g. one that requires a header).
    /// - Parameter http: extra directives of the `http` block (an `upstream` the locations use).
    public init(
        root: String, tls: TLSMaterial? = nil, http2: Bool = true, locations: String = "", http: String = ""
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executablePath) else {
            throw TestSupportError.missingExecutable(
                path: Self.executablePath, hint: "install Debian's nginx-light (apt-get install nginx-light)")
        }
        let workDir = try TempDirectory(prefix: "mprobe-nginx")
        let rootPath = URL(fileURLWithPath: root).standardizedFileURL.path
        let accessLog = workDir.file("access.log")
        let errorLog = workDir.file("error.log")
        let pidFile = workDir.file("nginx.pid")
        for sub in ["tmp", "tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"] {
            try FileManager.default.createDirectory(atPath: workDir.file(sub), withIntermediateDirectories: true)
        }

        var lastFailure = ""
        // The free port is only free until someone else takes it; retry on a bind race.
        for _ in 0..<5 {
            let port = try LoopbackSocket.freePort()
            let conf = workDir.file("nginx.conf")
            try Self.config(
                port: port, root: rootPath, tls: tls, http2: http2, workDir: workDir.path,
                accessLog: accessLog, pidFile: pidFile, locations: locations, http: http
            )
            .write(toFile: conf, atomically: true, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: pidFile)
            _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
            _ = FileManager.default.createFile(atPath: accessLog, contents: nil)
            guard let errHandle = FileHandle(forWritingAtPath: errorLog) else {
                throw TestSupportError.serverFailedToStart("cannot open \(errorLog)")
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executablePath)
            process.arguments = ["-p", workDir.path + "/", "-c", conf, "-e", "stderr"]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = errHandle
            process.standardError = errHandle
            try process.run()
            try? errHandle.close()

            switch Self.waitUntilListening(process, pidFile: pidFile, timeout: 10) {
            case .listening:
                self.port = port
                self.root = rootPath
                self.tls = tls
                self.accessLogPath = accessLog
                self.errorLogPath = errorLog
                self.workDir = workDir
                self.process = process
                return
            case .exited:
                lastFailure = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? "(no output)"
                if lastFailure.contains("Address already in use") { continue }
                throw TestSupportError.serverFailedToStart("nginx exited: \(lastFailure)")
            case .timedOut:
                Self.terminate(process)
                lastFailure = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
                throw TestSupportError.serverFailedToStart("nginx did not start listening within 10 s: \(lastFailure)")
            }
        }
        throw TestSupportError.serverFailedToStart("nginx could not bind a free port after 5 tries: \(lastFailure)")
    }

    deinit {
        stop()
    }

    /// Stops nginx (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        Self.terminate(process)
    }

    /// The access log parsed so far. nginx writes a line when a request completes, which can
    /// be a moment after the client has the last byte; use `waitForAccessLog(count:)` when a
    /// test must see every request it just made.
    public func accessLog() throws -> [AccessLogEntry] {
        let text = try String(contentsOfFile: accessLogPath, encoding: .utf8)
        return text.split(separator: "\n").compactMap { AccessLogEntry(line: String($0)) }
    }

    /// Polls the access log until it holds at least `count` entries or `timeout` passes, and
    /// returns what it has then.
    public func waitForAccessLog(count: Int, timeout: Double = 5) throws -> [AccessLogEntry] {
        let deadline = Date().addingTimeInterval(timeout)
        var entries = try accessLog()
        while entries.count < count && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
            entries = try accessLog()
        }
        return entries
    }

    /// Empties the access log; nginx appends (O_APPEND), so new lines start at offset 0.
    public func clearLog() {
        _ = truncate(accessLogPath, 0)
    }

    // MARK: - Internals

    private enum StartState { case listening, exited, timedOut }

    /// nginx writes its pid file only after it has opened its listening sockets, so the pid
    /// file appearing means the kernel already accepts connections. Waiting on it instead of
    /// probing with connect() keeps nginx's `$connection` counter free of probe connections.
    private static func waitUntilListening(_ process: Process, pidFile: String, timeout: Double) -> StartState {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let pid = try? String(contentsOfFile: pidFile, encoding: .utf8),
                !pid.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            {
                return process.isRunning ? .listening : .exited
            }
            if !process.isRunning { return .exited }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return process.isRunning ? .timedOut : .exited
    }

    private static func terminate(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            while process.isRunning { Thread.sleep(forTimeInterval: 0.01) }
        }
    }

    private static func config(
        port: Int, root: String, tls: TLSMaterial?, http2: Bool, workDir: String,
        accessLog: String, pidFile: String, locations: String, http: String
    ) -> String {
        var listen = "127.0.0.1:\(port)"
        var tlsLines = ""
        if let tls {
            listen += http2 ? " ssl http2" : " ssl"
            tlsLines = """
                        ssl_certificate \(quoted(tls.certPath));
                        ssl_certificate_key \(quoted(tls.keyPath));
                        ssl_protocols TLSv1.2 TLSv1.3;
                """
        }
        // Every path nginx would otherwise take from its compiled-in defaults (/var/lib/nginx,
        // /run) points into our own directory, so no system state is touched or needed.
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(quoted(pidFile));
            error_log stderr warn;
            events { worker_connections 1024; }
            http {
                default_type application/octet-stream;
                types {
                    video/mp4 mp4 m4v;
                    audio/mp4 m4a;
                    video/quicktime mov;
                    video/webm webm;
                    video/x-matroska mkv;
                    audio/mpeg mp3;
                    text/plain txt;
                    text/vtt vtt;
                    image/jpeg jpg jpeg;
                    image/png png;
                    application/json json;
                }
                client_body_temp_path \(quoted(workDir + "/tmp/body"));
                proxy_temp_path \(quoted(workDir + "/tmp/proxy"));
                fastcgi_temp_path \(quoted(workDir + "/tmp/fastcgi"));
                uwsgi_temp_path \(quoted(workDir + "/tmp/uwsgi"));
                scgi_temp_path \(quoted(workDir + "/tmp/scgi"));
                log_format mprobe '$connection $connection_requests "$request" $status $body_bytes_sent "$http_range" "$http_if_range"';
                access_log \(quoted(accessLog)) mprobe;
                sendfile on;
                tcp_nopush on;
                keepalive_requests 10000;
                keepalive_timeout 60s;
                etag on;
                server_tokens off;
            \(http)
                server {
                    listen \(listen);
                    server_name localhost 127.0.0.1;
            \(tlsLines)
                    root \(quoted(root));
            \(locations)
                    location / { }
                }
            }

            """
    }

    private static func quoted(_ path: String) -> String {
        "\"" + path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
