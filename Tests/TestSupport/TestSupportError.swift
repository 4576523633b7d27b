import Foundation

/// Errors thrown by the test-support helpers. Each case carries a sentence that tells the
/// person reading a failed test what to do, because these usually mean a broken test machine
/// rather than a bug in mprobe.
public enum TestSupportError: Error, CustomStringConvertible, Sendable {
    case missingExecutable(path: String, hint: String)
    case system(call: String, errno: Int32)
    case processFailed(command: String, status: Int32, stderr: String)
    case timedOut(command: String, seconds: Double, stderr: String)
    case serverFailedToStart(String)

    public var description: String {
        switch self {
        case let .missingExecutable(path, hint):
            return "required executable not found at \(path): \(hint)"
        case let .system(call, code):
            return "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case let .processFailed(command, status, stderr):
            return "\(command) exited with status \(status): \(stderr)"
        case let .timedOut(command, seconds, stderr):
            return "\(command) did not finish within \(seconds) s and was killed; stderr so far: \(stderr)"
        case let .serverFailedToStart(reason):
            return "test server failed to start: \(reason)"
        }
    }
}
