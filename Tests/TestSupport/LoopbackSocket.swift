import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Thin wrappers over the POSIX socket calls the test servers need. Everything binds to
/// 127.0.0.1: test servers must never be reachable from outside the machine.
public enum LoopbackSocket {
    /// A listening TCP socket on 127.0.0.1; port 0 lets the kernel pick a free one.
    public static func listen(port: Int = 0, backlog: Int32 = 128) throws -> (fd: Int32, port: Int) {
        // CLOEXEC: children we spawn (nginx, curl, mprobe) must not inherit our sockets.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.system(call: "socket", errno: errno) }
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw TestSupportError.system(call: "bind(127.0.0.1:\(port))", errno: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw TestSupportError.system(call: "listen", errno: code)
        }
        do {
            return (fd, try localPort(of: fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// A port that was free a moment ago, for servers we cannot hand a socket to (nginx).
    /// Racy by nature, so callers retry when the server then fails to bind.
    public static func freePort() throws -> Int {
        let (fd, port) = try listen(port: 0, backlog: 1)
        close(fd)
        return port
    }

    static func localPort(of fd: Int32) throws -> Int {
        var addr = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard rc == 0 else { throw TestSupportError.system(call: "getsockname", errno: errno) }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func loopbackAddress(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return addr
    }

    /// Sends all of `bytes`; false when the peer is gone. MSG_NOSIGNAL turns a write to a
    /// closed connection into EPIPE instead of a SIGPIPE that would kill the test runner.
    public static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var base = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let n = send(fd, base, remaining, Int32(MSG_NOSIGNAL))
            if n > 0 {
                base += n
                remaining -= n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}
