import Foundation
import Reports

/// What stdout is drawn on: how wide it is and whether it shows Unicode.
enum Terminal {
    /// Columns to draw in: `COLUMNS` when set (the user's say wins), else the width of the
    /// terminal on stdout, else 80 (a pipe or a file has no width of its own).
    static var width: Int {
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 {
            return columns
        }
        var size = winsize()
        if isatty(STDOUT_FILENO) != 0, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        return 80
    }

    /// Block characters on a terminal whose character set is UTF-8; plain ASCII anywhere else
    /// (a pipe, a file, a terminal in another locale), so that output stays readable as bytes.
    static var mapCharset: CacheMap.Charset {
        guard isatty(STDOUT_FILENO) != 0 else { return .ascii }
        // The C library's precedence: LC_ALL, then LC_CTYPE, then LANG; the first one set decides.
        let environment = ProcessInfo.processInfo.environment
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        let lowered = locale.lowercased()
        return lowered.contains("utf-8") || lowered.contains("utf8") ? .unicode : .ascii
    }
}
