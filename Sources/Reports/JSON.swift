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
        write(to: &out, indent: nil, level: 0)
        return out
    }

    /// The value over several lines, each member or item on its own line indented by `width`
    /// spaces a level, as ffprobe's JSON writer lays it out (an empty object or array keeps an
    /// empty line between its brackets there, and here too).
    public func text(indentedBy width: Int) -> String {
        var out = ""
        write(to: &out, indent: width, level: 0)
        return out
    }

    private func write(to out: inout String, indent: Int?, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): JSON.escape(s, into: &out)
        case .verbatim(let text): out += text
        case .array(let items):
            out += "["
            JSON.writeMembers(items.map { (nil, $0) }, to: &out, indent: indent, level: level)
            out += "]"
        case .object(let members):
            out += "{"
            JSON.writeMembers(members.map { ($0.0, $0.1) }, to: &out, indent: indent, level: level)
            out += "}"
        }
    }

    /// The members of an object (with keys) or the items of an array (without), between its brackets.
    private static func writeMembers(_ members: [(String?, JSON)], to out: inout String, indent: Int?, level: Int) {
        let inner = indent.map { "\n" + String(repeating: " ", count: $0 * (level + 1)) } ?? ""
        for (i, (key, value)) in members.enumerated() {
            out += i > 0 ? (indent == nil ? ", " : ",") : ""
            out += inner
            if let key {
                escape(key, into: &out)
                out += ": "
            }
            value.write(to: &out, indent: indent, level: level + 1)
        }
        if let indent {
            out += members.isEmpty ? "\n\n" : "\n"
            out += String(repeating: " ", count: indent * level)
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
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
