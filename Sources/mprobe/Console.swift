import Foundation
import Synchronization
import URLSupport

/// The CLI's only way to print. Library code never prints; it returns values and warnings.
///
/// Output errors are errors: a closed pipe (`| head`) on stdout stops the command quietly, any
/// other failure to write stdout (a full disk, EIO, a closed descriptor) ends it with exit 6 and
/// a message. Nothing here traps: `write(2)` is called directly, never `FileHandle.write`.
/// Failures on stderr are ignored — there is nowhere left to report them.
enum Console {
    /// The first failure writing stdout; once set, stdout is not written again.
    private static let stdoutFailure = Mutex<StdoutError?>(nil)

    static var stdoutError: StdoutError? { stdoutFailure.withLock { $0 } }

    /// True once stdout is gone: batches stop starting work whose output nobody reads.
    static var stdoutGone: Bool { stdoutError != nil }

    /// Descriptors 0, 1 and 2 that the caller closed (`>&-`, `2>&-`) are held open on /dev/null,
    /// read-only: writes to them still fail as they should, but a file the cache opens can never
    /// get descriptor 1 or 2 and receive our output. Call before anything opens a file.
    static func reserveStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", O_RDONLY)
            if opened >= 0 && opened != fd { close(opened) }  // not the lowest free descriptor: leave it
        }
    }

    static func out(_ text: String) {
        var line = text
        line += "\n"
        line.withUTF8 { try? writeStdout(UnsafeRawBufferPointer($0)) }
    }

    /// Errors and warnings are shown with every URL in them redacted (userinfo, well-known
    /// signatures), whatever built them.
    static func error(_ text: String) {
        writeStderr("mprobe: " + URLRules.standard.scrubbed(text) + "\n")
    }

    static func warning(_ text: String) {
        writeStderr("mprobe: warning: " + URLRules.standard.scrubbed(text) + "\n")
    }

    /// Writes raw bytes to stdout, all of them, or throws the failure (also remembered, so the
    /// exit status can report it).
    static func writeStdout(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure = stdoutError { throw failure }
        if let errno = writeAll(STDOUT_FILENO, bytes) {
            let failure: StdoutError = errno == EPIPE ? .closed : .failed(errno: errno)
            stdoutFailure.withLock { if $0 == nil { $0 = failure } }
            throw failure
        }
    }

    /// Text for stderr, in one write per call so lines of several threads do not interleave.
    static func writeStderr(_ text: String) {
        var text = text
        text.withUTF8 { _ = writeAll(STDERR_FILENO, UnsafeRawBufferPointer($0)) }
    }

    /// Writes everything, retrying short writes and EINTR; returns the errno of a failure.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var done = 0
        while done < bytes.count {
            let n = write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }

    static func humanBytes(_ n: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(n) B" : String(format: "%.1f %@", value, units[unit])
    }
}

/// Writing stdout failed.
enum StdoutError: Error, Equatable, CustomStringConvertible {
    /// The reader went away (EPIPE, e.g. `mprobe cat URL | head`): stop quietly.
    case closed
    /// A real write error (ENOSPC, EIO, EBADF...): the output is incomplete.
    case failed(errno: Int32)

    var description: String {
        switch self {
        case .closed: return "stdout was closed by its reader"
        case .failed(let errno):
            return "cannot write to stdout: \(String(cString: strerror(errno))); the output is incomplete"
        }
    }
}
