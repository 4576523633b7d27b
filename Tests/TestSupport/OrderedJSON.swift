import Foundation

/// JSON parsed with object keys in their order and numbers as written, so two outputs can be
/// compared key by key — order and value types included (`"25"` is not `25`), which
/// `JSONSerialization` cannot tell.
public indirect enum OrderedJSON: Equatable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// The number's text as written.
    case number(String)
    case string(String)
    case array([OrderedJSON])
    case object([Member])

    public struct Member: Equatable, Sendable {
        public let key: String
        public let value: OrderedJSON
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws {
        var parser = Parser(scalars: Array(text.unicodeScalars))
        self = try parser.value()
        parser.skipSpace()
        guard parser.atEnd else { throw ParseError(description: "text after the JSON value at \(parser.position)") }
    }

    public init(parsing bytes: [UInt8]) throws { try self.init(parsing: String(decoding: bytes, as: UTF8.self)) }

    /// The member `key` of an object.
    public subscript(key: String) -> OrderedJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var description: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .number(let n): return n
        case .string(let s): return "\"\(s)\""
        case .array(let items): return "[\(items.map(\.description).joined(separator: ", "))]"
        case .object(let members): return "{\(members.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", "))}"
        }
    }

    /// Where `actual` differs from `self`, one line each: a value or type that differs, a key that
    /// is missing, extra or out of order, an array of another length. `ignore` gets each path
    /// (`streams[0].start_time`) and may skip it.
    public func differences(
        from actual: OrderedJSON, at path: String = "",
        ignore: (String) -> Bool = { _ in false }
    ) -> [String] {
        if ignore(path) { return [] }
        switch (self, actual) {
        case (.object(let expected), .object(let got)):
            var out: [String] = []
            let wanted = expected.map(\.key).filter { !ignore(Self.join(path, $0)) }
            let seen = got.map(\.key).filter { !ignore(Self.join(path, $0)) }
            let missing = wanted.filter { !seen.contains($0) }
            let extra = seen.filter { !wanted.contains($0) }
            if !missing.isEmpty {
                out.append("\(path.isEmpty ? "top level" : path): missing \(missing.joined(separator: ", "))")
            }
            if !extra.isEmpty {
                out.append("\(path.isEmpty ? "top level" : path): extra \(extra.joined(separator: ", "))")
            }
            if missing.isEmpty && extra.isEmpty && wanted != seen {
                out.append("\(path.isEmpty ? "top level" : path): keys in another order: \(seen) instead of \(wanted)")
            }
            for member in expected {
                guard let other = got.first(where: { $0.key == member.key }) else { continue }
                out += member.value.differences(from: other.value, at: Self.join(path, member.key), ignore: ignore)
            }
            return out
        case (.array(let expected), .array(let got)):
            guard expected.count == got.count else {
                return ["\(path): \(got.count) items instead of \(expected.count)"]
            }
            return zip(expected, got).enumerated().flatMap { i, pair in
                pair.0.differences(from: pair.1, at: "\(path)[\(i)]", ignore: ignore)
            }
        default:
            return self == actual ? [] : ["\(path): \(actual) instead of \(self)"]
        }
    }

    private static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var position = 0

        var atEnd: Bool { position >= scalars.count }

        mutating func skipSpace() {
            while !atEnd, [" ", "\n", "\r", "\t"].contains(scalars[position]) { position += 1 }
        }

        mutating func value() throws -> OrderedJSON {
            skipSpace()
            guard !atEnd else { throw ParseError(description: "unexpected end") }
            switch scalars[position] {
            case "{":
                position += 1
                var members: [Member] = []
                skipSpace()
                if consume("}") { return .object(members) }
                repeat {
                    skipSpace()
                    guard case .string(let key) = try value() else {
                        throw ParseError(description: "object key at \(position)")
                    }
                    skipSpace()
                    guard consume(":") else { throw ParseError(description: "':' expected at \(position)") }
                    members.append(Member(key: key, value: try value()))
                    skipSpace()
                } while consume(",")
                guard consume("}") else { throw ParseError(description: "'}' expected at \(position)") }
                return .object(members)
            case "[":
                position += 1
                var items: [OrderedJSON] = []
                skipSpace()
                if consume("]") { return .array(items) }
                repeat {
                    items.append(try value())
                    skipSpace()
                } while consume(",")
                guard consume("]") else { throw ParseError(description: "']' expected at \(position)") }
                return .array(items)
            case "\"":
                return .string(try string())
            case "t" where literal("true"): return .bool(true)
            case "f" where literal("false"): return .bool(false)
            case "n" where literal("null"): return .null
            default:
                let start = position
                while !atEnd, "+-0123456789.eE".unicodeScalars.contains(scalars[position]) { position += 1 }
                guard position > start else {
                    throw ParseError(description: "unexpected '\(scalars[start])' at \(start)")
                }
                return .number(String(String.UnicodeScalarView(scalars[start..<position])))
            }
        }

        mutating func consume(_ c: Unicode.Scalar) -> Bool {
            guard !atEnd, scalars[position] == c else { return false }
            position += 1
            return true
        }

        mutating func literal(_ word: String) -> Bool {
            let w = Array(word.unicodeScalars)
            guard position + w.count <= scalars.count, Array(scalars[position..<position + w.count]) == w else {
                return false
            }
            position += w.count
            return true
        }

        mutating func string() throws -> String {
            position += 1
            var out = String.UnicodeScalarView()
            while !atEnd {
                let c = scalars[position]
                position += 1
                switch c {
                case "\"": return String(out)
                case "\\":
                    guard !atEnd else { break }
                    let e = scalars[position]
                    position += 1
                    switch e {
                    case "n": out.append("\n")
                    case "r": out.append("\r")
                    case "t": out.append("\t")
                    case "b": out.append("\u{08}")
                    case "f": out.append("\u{0C}")
                    case "u":
                        guard position + 4 <= scalars.count,
                            let code = UInt32(
                                String(String.UnicodeScalarView(scalars[position..<position + 4])), radix: 16)
                        else {
                            throw ParseError(description: "bad \\u escape at \(position)")
                        }
                        position += 4
                        out.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default: out.append(e)
                    }
                default: out.append(c)
                }
            }
            throw ParseError(description: "unterminated string")
        }
    }
}
