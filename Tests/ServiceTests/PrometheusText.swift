import Foundation

/// A strict reader of the Prometheus text exposition format (0.0.4), enough to prove `/metrics`
/// parses: every sample belongs to a family declared by `# TYPE` before it, names and labels
/// have the allowed syntax, values are numbers, histograms have cumulative buckets ending in +Inf.
enum PrometheusText {
    struct Invalid: Error, CustomStringConvertible {
        let line: String
        let why: String
        var description: String { "\(why): \(line)" }
    }

    /// Samples by `name{labels}` (as written) → value.
    static func parse(_ text: String) throws -> [String: Double] {
        var types: [String: String] = [:]
        var samples: [String: Double] = [:]
        var lastBucket: [String: Double] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
                guard parts.count >= 3, ["HELP", "TYPE"].contains(parts[1]), isName(parts[2]) else {
                    throw Invalid(line: line, why: "a comment must be # HELP or # TYPE with a metric name")
                }
                if parts[1] == "TYPE" {
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                        throw Invalid(line: line, why: "unknown type")
                    }
                    guard types[parts[2]] == nil else { throw Invalid(line: line, why: "family declared twice") }
                    types[parts[2]] = parts[3]
                }
                continue
            }
            guard let space = line.lastIndex(of: " ") else { throw Invalid(line: line, why: "no value") }
            let series = String(line[..<space]), valueText = String(line[line.index(after: space)...])
            guard let value = Double(valueText) ?? (valueText == "+Inf" ? Double.infinity : nil) else {
                throw Invalid(line: line, why: "the value is not a number")
            }
            let name = series.prefix { $0 != "{" }
            guard isName(String(name)) else { throw Invalid(line: line, why: "bad metric name") }
            if series.count > name.count { try checkLabels(String(series.dropFirst(name.count)), line: line) }
            let family = ["_bucket", "_sum", "_count"].first { name.hasSuffix($0) && types[String(name.dropLast($0.count))] == "histogram" }
                .map { String(name.dropLast($0.count)) } ?? String(name)
            guard types[family] != nil else { throw Invalid(line: line, why: "sample before its # TYPE") }
            if name.hasSuffix("_bucket") {
                guard series.contains("le=\"") else { throw Invalid(line: line, why: "a bucket without le") }
                guard value >= lastBucket[family, default: 0] else { throw Invalid(line: line, why: "buckets must be cumulative") }
                lastBucket[family] = value
            }
            guard samples[series] == nil else { throw Invalid(line: line, why: "the same series twice") }
            samples[series] = value
        }
        return samples
    }

    private static func isName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, CharacterSet.letters.contains(first) || first == "_" || first == ":" else { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == ":") }
    }

    /// `{name="value",...}` with `\\`, `\"` and `\n` the only escapes.
    private static func checkLabels(_ text: String, line: String) throws {
        guard text.hasPrefix("{"), text.hasSuffix("}") else { throw Invalid(line: line, why: "labels must be in braces") }
        var rest = Substring(text.dropFirst().dropLast())
        while !rest.isEmpty {
            guard let eq = rest.firstIndex(of: "="), isName(String(rest[..<eq])) else { throw Invalid(line: line, why: "bad label name") }
            rest = rest[rest.index(after: eq)...]
            guard rest.first == "\"" else { throw Invalid(line: line, why: "label values are quoted") }
            rest = rest.dropFirst()
            var closed = false
            while let c = rest.first {
                rest = rest.dropFirst()
                if c == "\\" {
                    guard let next = rest.first, ["\\", "\"", "n"].contains(next) else { throw Invalid(line: line, why: "bad escape") }
                    rest = rest.dropFirst()
                } else if c == "\"" {
                    closed = true
                    break
                }
            }
            guard closed else { throw Invalid(line: line, why: "unterminated label value") }
            if rest.first == "," { rest = rest.dropFirst() } else if !rest.isEmpty { throw Invalid(line: line, why: "labels must be separated by commas") }
        }
    }
}
