import Foundation

/// A JSON value with object keys kept in the order they were written, so output reads well.
/// The CLI and the service print the same objects through it.
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])
    /// JSON text already encoded (a stored job result), written as it is.
    case verbatim(String)

    public static func int(_ v: Int) -> JSON { .int(Int64(v)) }
    public static func optional(_ v: Int64?) -> JSON { v.map { .int($0) } ?? .null }
    public static func optional(_ v: String?) -> JSON { v.map { .string($0) } ?? .null }

    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): JSON.escape(s, into: &out)
        case .verbatim(let text): out += text
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += ", " }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += ", " }
                JSON.escape(key, into: &out)
                out += ": "
                value.write(to: &out)
            }
            out += "}"
        }
    }

    private static func escape(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
