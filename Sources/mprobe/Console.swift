import Foundation

/// The CLI's only way to print. Library code never prints; it returns values and warnings.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("mprobe: " + text + "\n").utf8))
    }

    static func warning(_ text: String) {
        FileHandle.standardError.write(Data(("mprobe: warning: " + text + "\n").utf8))
    }

    /// Writes raw bytes to stdout, all of them. Throws on a closed pipe (EPIPE) or other errors.
    static func writeStdout(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = write(STDOUT_FILENO, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw StdoutClosed()
            }
            done += n
        }
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

/// stdout went away (e.g. `mprobe cat URL | head`): stop quietly.
struct StdoutClosed: Error {}
