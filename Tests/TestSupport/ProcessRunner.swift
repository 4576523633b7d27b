import Foundation
import Synchronization

/// What a finished child process left behind. `stdout` stays bytes because CLI tests pipe
/// media and images through it; `stderr` is text for assertion messages.
public struct ProcessResult: Sendable {
    /// The exit status, or 128 + signal number when the process was killed by a signal
    /// (the shell's convention), so a crash never looks like a deliberate exit code.
    public let status: Int32
    public let stdout: [UInt8]
    public let stderr: String

    public var stdoutString: String { String(decoding: stdout, as: UTF8.self) }

    public init(status: Int32, stdout: [UInt8], stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Looks `name` up on `PATH` (or returns it if it already contains a slash and is executable).
public func findExecutable(_ name: String) -> String? {
    let fm = FileManager.default
    if name.contains("/") { return fm.isExecutableFile(atPath: name) ? name : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if fm.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Writing stdin to a child that exited early raises SIGPIPE, whose default action would
/// kill the whole test runner; ignore it once, process-wide (EPIPE is handled instead).
private let ignoreSIGPIPE: Void = {
    _ = signal(SIGPIPE, SIG_IGN)
}()

/// Bytes collected by a reader thread; shared with the waiting thread.
private final class ByteSink: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func append(_ chunk: UnsafeRawBufferPointer) { bytes.withLock { $0.append(contentsOf: chunk) } }
    var value: [UInt8] { bytes.withLock { $0 } }
}

/// Drains `fd` on its own thread so neither stdout nor stderr can fill its pipe buffer and
/// block the child while we wait on the other one (100 MB outputs are normal here).
private func startDraining(_ handle: FileHandle, into sink: ByteSink, group: DispatchGroup) {
    let fd = handle.fileDescriptor
    group.enter()
    let thread = Thread {
        defer { group.leave() }
        let chunkSize = 1 << 16
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let n = read(fd, chunk.baseAddress, chunkSize)
            if n > 0 {
                sink.append(UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
    }
    thread.start()
}

/// Runs `executable` (a path, or a name looked up on PATH) and collects its output.
///
/// - Parameters:
///   - environment: variables set on top of the inherited environment (not a replacement,
///     so PATH, HOME and friends stay available to the child).
///   - stdin: bytes fed to the child's standard input; nil means /dev/null.
///   - timeout: seconds before the child is killed and `TestSupportError.timedOut` is thrown.
public func runProcess(
    _ executable: String, _ args: [String], environment: [String: String]? = nil,
    stdin: [UInt8]? = nil, timeout: Double = 120
) throws -> ProcessResult {
    _ = ignoreSIGPIPE
    guard let path = findExecutable(executable) else {
        throw TestSupportError.missingExecutable(path: executable, hint: "install it or fix PATH")
    }
    let command = ([path] + args).joined(separator: " ")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = args
    if let environment {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    let outPipe = Pipe()
    let errPipe = Pipe()
    let inPipe = stdin == nil ? nil : Pipe()
    process.standardOutput = outPipe
    process.standardError = errPipe
    process.standardInput = inPipe ?? FileHandle.nullDevice

    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    // Foundation closes our copies of the child's pipe ends after spawning, so the readers
    // see EOF once the child (and anything it forked) has exited.
    try process.run()

    let readers = DispatchGroup()
    let out = ByteSink()
    let err = ByteSink()
    startDraining(outPipe.fileHandleForReading, into: out, group: readers)
    startDraining(errPipe.fileHandleForReading, into: err, group: readers)

    if let inPipe, let stdin {
        let writer = inPipe.fileHandleForWriting
        Thread {
            let fd = writer.fileDescriptor
            stdin.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { break }
                }
            }
            try? writer.close()
        }.start()
    }

    if exited.wait(timeout: .now() + timeout) == .timedOut {
        process.terminate()
        if exited.wait(timeout: .now() + 2) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        _ = readers.wait(timeout: .now() + 2)
        throw TestSupportError.timedOut(
            command: command, seconds: timeout,
            stderr: String(decoding: err.value, as: UTF8.self))
    }
    // A grandchild that inherited the pipes could keep them open forever; don't hang on it.
    if readers.wait(timeout: .now() + 10) == .success {
        // Foundation does not close the read ends when the pipes go away: close them once the
        // readers are done, or a run of hundreds of processes leaves descriptors past
        // FD_SETSIZE, where a server using select() cannot listen any more.
        try? outPipe.fileHandleForReading.close()
        try? errPipe.fileHandleForReading.close()
    }
    let status =
        process.terminationReason == .uncaughtSignal
        ? 128 + process.terminationStatus : process.terminationStatus
    return ProcessResult(status: status, stdout: out.value, stderr: String(decoding: err.value, as: UTF8.self))
}

/// The SwiftPM build products directory (`.build/<triple>/debug`) of the running tests:
/// the directory holding the `.xctest` bundle (on Linux, the test executable itself).
/// `MPROBE_PRODUCTS_DIR` overrides the search, for running tests from unusual places.
public func productsDirectory() -> String {
    if let override = ProcessInfo.processInfo.environment["MPROBE_PRODUCTS_DIR"], !override.isEmpty {
        return override
    }
    func parentOfXCTest(_ path: String) -> String? {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        while url.path != "/" {
            if url.pathExtension == "xctest" { return url.deletingLastPathComponent().path }
            url = url.deletingLastPathComponent()
        }
        return nil
    }
    for bundle in Bundle.allBundles {
        if let dir = parentOfXCTest(bundle.bundlePath) { return dir }
    }
    let exe =
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments.first ?? Bundle.main.bundlePath
    if let dir = parentOfXCTest(exe) { return dir }
    return URL(fileURLWithPath: exe).deletingLastPathComponent().path
}

/// The built `mprobe` executable next to the test bundle. `MPROBE_BINARY` overrides it.
public func mprobeBinary() throws -> String {
    if let override = ProcessInfo.processInfo.environment["MPROBE_BINARY"], !override.isEmpty {
        guard FileManager.default.isExecutableFile(atPath: override) else {
            throw TestSupportError.missingExecutable(path: override, hint: "MPROBE_BINARY points to no executable")
        }
        return override
    }
    let path = productsDirectory() + "/mprobe"
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw TestSupportError.missingExecutable(
            path: path,
            hint: "build it first with `swift build --product mprobe` (or run `swift test`, which builds all products)")
    }
    return path
}
