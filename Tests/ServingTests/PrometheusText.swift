import Foundation
import TestSupport

/// `/metrics` as the tests read it: checked by Prometheus's own `promtool check metrics` (Debian's
/// `prometheus` package; a missing one is an error, never a skip), then its samples by name.
enum PrometheusText {
    /// The samples of `text`, by `name{labels}` as written, once promtool has passed it.
    static func checkedSamples(_ text: String) throws -> [String: Double] {
        let checked = try runProcess("promtool", ["check", "metrics"], stdin: Array(text.utf8), timeout: 60)
        guard checked.status == 0 else {
            throw TestSupportError.processFailed(
                command: "promtool check metrics", status: checked.status,
                stderr: checked.stdoutString + checked.stderr)
        }
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
