import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's Chromium, headless, driven over the DevTools protocol through a pipe
/// (`--remote-debugging-pipe`: JSON messages ending in NUL; the browser reads descriptor 3 and
/// writes descriptor 4). No port and no websocket: the test holds both ends of the pipe.
///
/// Not thread-safe: one test thread drives it. A missing `chromium` is an error, never a skip.
public final class Browser {
    /// A protocol event: its method, its parameters and the page session it came from.
    public struct Event {
        public let method: String
        public let params: [String: Any]
        public let session: String?
    }

    private let pid: pid_t
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let profile: TempDirectory
    /// The browser's own stdout and stderr, for error messages.
    public let logPath: String
    private var pending: [UInt8] = []
    private var nextID = 1
    private var closed = false
    /// Every event received so far, in order.
    public private(set) var events: [Event] = []

    /// `arguments` are added to Chromium's command line (e.g. `--host-resolver-rules=MAP name 127.0.0.1`).
    public init(arguments extra: [String] = []) throws {
        guard let executable = findExecutable("chromium") else {
            throw TestSupportError.missingExecutable(
                path: "chromium", hint: "install Debian's chromium package (scripts/deps.sh lists it)")
        }
        profile = try TempDirectory(prefix: "mprobe-chromium")
        logPath = profile.file("chromium.log")
        let arguments =
            [
                executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--remote-debugging-pipe", "--user-data-dir=" + profile.file("profile"),
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                "--mute-audio", "--autoplay-policy=no-user-gesture-required",
            ] + extra + ["about:blank"]
        // Our ends are moved above the descriptors the child gets, so that no dup2 below can
        // overwrite a pipe end before it is itself duplicated.
        let (childReads, ourWrite) = try Browser.highPipe()
        let (ourRead, childWrites) = try Browser.highPipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, childReads, 3)
        posix_spawn_file_actions_adddup2(&actions, childWrites, 4)
        var cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, nil, &cArguments, environ)
        Glibc.close(childReads)
        Glibc.close(childWrites)
        guard rc == 0 else {
            Glibc.close(ourWrite)
            Glibc.close(ourRead)
            throw TestSupportError.system(call: "posix_spawn chromium", errno: rc)
        }
        pid = child
        toBrowser = ourWrite
        fromBrowser = ourRead
        _ = try call("Browser.getVersion", timeout: 30)
    }

    /// A pipe whose two ends are above descriptor 10 and close on exec (the child gets
    /// copies through `dup2`, which clears that flag on the copy).
    private static func highPipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw TestSupportError.system(call: "pipe", errno: errno) }
        let high = fds.map { fcntl($0, F_DUPFD_CLOEXEC, 10) }
        fds.forEach { Glibc.close($0) }
        guard high.allSatisfy({ $0 >= 0 }) else {
            throw TestSupportError.system(call: "fcntl F_DUPFD_CLOEXEC", errno: errno)
        }
        return (high[0], high[1])
    }

    /// A new tab of `width` x `height` CSS pixels, attached in its own protocol session, with
    /// its exceptions, console, log and network requests recorded.
    public func newPage(width: Int = 1280, height: Int = 900) throws -> BrowserPage {
        let target = try call("Target.createTarget", ["url": "about:blank"])
        guard let targetID = target["targetId"] as? String else {
            throw Browser.failure("Target.createTarget: \(target)")
        }
        let attached = try call("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else {
            throw Browser.failure("Target.attachToTarget: \(attached)")
        }
        let page = BrowserPage(browser: self, session: session)
        for domain in ["Page", "Runtime", "Log", "Network"] { _ = try call(domain + ".enable", session: session) }
        try page.setViewport(width: width, height: height)
        return page
    }

    /// Sends one command and returns its result; events that arrive meanwhile are recorded.
    @discardableResult
    public func call(
        _ method: String, _ params: [String: Any] = [:], session: String? = nil,
        timeout: Double = 30
    ) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var bytes = Array(try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        try write(bytes)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reply = try readMessage(until: deadline, waitingFor: method)
            if let replyID = reply["id"] as? Int, replyID == id {
                if let error = reply["error"] as? [String: Any] {
                    throw Browser.failure("\(method): \(error["message"] ?? error)")
                }
                return reply["result"] as? [String: Any] ?? [:]
            }
            if let event = reply["method"] as? String {
                events.append(
                    Event(
                        method: event, params: reply["params"] as? [String: Any] ?? [:],
                        session: reply["sessionId"] as? String))
            }
        }
    }

    private func write(_ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(toBrowser, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw TestSupportError.system(call: "write to chromium", errno: errno) }
            done += n
        }
    }

    private func readMessage(until deadline: Date, waitingFor method: String) throws -> [String: Any] {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            if let end = pending.firstIndex(of: 0) {
                let data = Data(pending[..<end])
                pending.removeSubrange(...end)
                if let message = try JSONSerialization.jsonObject(with: data) as? [String: Any] { return message }
                continue
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                throw TestSupportError.timedOut(command: "chromium: " + method, seconds: 0, stderr: log)
            }
            var descriptor = pollfd(fd: fromBrowser, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { throw TestSupportError.system(call: "poll", errno: errno) }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fromBrowser, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw Browser.failure("chromium closed its pipe (it exited?) while \(method) ran: \(log)")
            }
            pending += chunk[0..<n]
        }
    }

    /// The browser's output so far (its last 4000 characters).
    public var log: String {
        String(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").suffix(4000))
    }

    static func failure(_ message: String) -> TestSupportError {
        .processFailed(command: "chromium (DevTools protocol)", status: -1, stderr: message)
    }

    /// Asks the browser to quit, then makes sure it has (SIGKILL after 5 s).
    public func close() {
        guard !closed else { return }
        closed = true
        _ = try? call("Browser.close", timeout: 5)
        Glibc.close(toBrowser)
        Glibc.close(fromBrowser)
        let deadline = Date().addingTimeInterval(5)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(20_000)
        }
    }

    deinit { close() }
}
