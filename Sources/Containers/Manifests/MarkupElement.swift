import Foundation

/// A small XML reader for DASH manifests: elements with their attributes and children, text kept
/// for elements that hold only text (`BaseURL`). Namespace prefixes are dropped from names; the
/// declaration, comments, processing instructions and a DOCTYPE are skipped (no entities are
/// defined from one: only the five predefined and numeric references are decoded). Depth and
/// element count are bounded: a manifest is a few thousand elements.
package struct MarkupElement: Sendable {
    let name: String
    let attributes: [String: String]
    var children: [MarkupElement] = []
    var text = ""
    /// As written (with its namespace prefix), and the attributes in their order: for writing the
    /// element out again (`xml`).
    var qualifiedName = ""
    var written: [(name: String, value: String)] = []

    func child(_ name: String) -> MarkupElement? { children.first { $0.name == name } }
    func all(_ name: String) -> [MarkupElement] { children.filter { $0.name == name } }
    subscript(_ attribute: String) -> String? { attributes[attribute] }

    package struct Malformed: Error {
        let detail: String
    }

    static let maximumDepth = 64
    static let maximumElements = 500_000

    /// The document's root element.
    static func parse(_ text: String) throws -> MarkupElement {
        var reader = Reader(bytes: Array(text.utf8))
        return try reader.document()
    }

    private struct Reader {
        let bytes: [UInt8]
        var p = 0
        var elements = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func document() throws -> MarkupElement {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { p = 3 }
            while true {
                skipSpace()
                guard p < bytes.count else { throw Malformed(detail: "no root element") }
                guard bytes[p] == UInt8(ascii: "<") else { throw Malformed(detail: "text before the root element") }
                if try skipMarkup() { continue }
                return try element(depth: 0)
            }
        }

        /// Skips `<?...?>`, `<!--...-->` and `<!...>` at `p`; false when an element starts there.
        mutating func skipMarkup() throws -> Bool {
            if starts("<?") { try skip(past: "?>"); return true }
            if starts("<!--") { try skip(past: "-->"); return true }
            if starts("<!DOCTYPE") || starts("<!doctype") {
                // Manifests have none; its entities (billion laughs, external files) are never expanded.
                throw Malformed(detail: "a DOCTYPE, which a manifest does not have")
            }
            if starts("<!") && !starts("<![CDATA[") { try skip(past: ">"); return true }
            return false
        }

        mutating func element(depth: Int) throws -> MarkupElement {
            guard depth < MarkupElement.maximumDepth else {
                throw Malformed(detail: "elements nested deeper than \(MarkupElement.maximumDepth)")
            }
            elements += 1
            guard elements <= MarkupElement.maximumElements else {
                throw Malformed(detail: "more than \(MarkupElement.maximumElements) elements")
            }
            p += 1  // <
            let qualified = token()
            let name = localName(qualified)
            guard !name.isEmpty else { throw Malformed(detail: "an element without a name at byte \(p)") }
            var attributes: [String: String] = [:]
            var written: [(name: String, value: String)] = []
            func made() -> MarkupElement {
                var node = MarkupElement(name: name, attributes: attributes)
                (node.qualifiedName, node.written) = (qualified, written)
                return node
            }
            while true {
                skipSpace()
                guard p < bytes.count else { throw Malformed(detail: "<\(name)> is not closed") }
                if starts("/>") { p += 2; return made() }
                if bytes[p] == UInt8(ascii: ">") { p += 1; break }
                let qualifiedKey = token()
                let key = localName(qualifiedKey)
                skipSpace()
                guard !key.isEmpty, p < bytes.count, bytes[p] == UInt8(ascii: "=") else {
                    throw Malformed(detail: "a malformed attribute in <\(name)>")
                }
                p += 1
                skipSpace()
                guard p < bytes.count, bytes[p] == UInt8(ascii: "\"") || bytes[p] == UInt8(ascii: "'") else {
                    throw Malformed(detail: "an unquoted attribute \(key) in <\(name)>")
                }
                let quote = bytes[p]
                p += 1
                let start = p
                while p < bytes.count && bytes[p] != quote { p += 1 }
                guard p < bytes.count else { throw Malformed(detail: "an unterminated attribute \(key) in <\(name)>") }
                guard attributes[key] == nil else {
                    throw Malformed(detail: "<\(name)> has the attribute \(key) twice")
                }
                attributes[key] = try decode(bytes[start..<p])
                written.append((qualifiedKey, attributes[key] ?? ""))
                p += 1
            }
            var node = made()
            while true {
                let start = p
                while p < bytes.count && bytes[p] != UInt8(ascii: "<") { p += 1 }
                node.text += try decode(bytes[start..<p])
                guard p < bytes.count else { throw Malformed(detail: "<\(name)> is not closed") }
                if starts("</") {
                    p += 2
                    let closing = localName(token())
                    guard closing == name else { throw Malformed(detail: "<\(name)> closed by </\(closing)>") }
                    try skip(past: ">")
                    node.text = node.text.trimmingCharacters(in: .whitespacesAndNewlines)
                    return node
                }
                if starts("<![CDATA[") {
                    p += 9
                    let from = p
                    try skip(past: "]]>")
                    node.text += String(decoding: bytes[from..<p - 3], as: UTF8.self)
                    continue
                }
                if try skipMarkup() { continue }
                node.children.append(try element(depth: depth + 1))
            }
        }

        func starts(_ s: String) -> Bool {
            let u = Array(s.utf8)
            return p + u.count <= bytes.count && bytes[p..<p + u.count].elementsEqual(u)
        }

        mutating func skip(past end: String) throws {
            let u = Array(end.utf8)
            while p + u.count <= bytes.count {
                if bytes[p..<p + u.count].elementsEqual(u) { p += u.count; return }
                p += 1
            }
            throw Malformed(detail: "unterminated markup (no \(end))")
        }

        mutating func skipSpace() {
            while p < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[p]) { p += 1 }
        }

        mutating func token() -> String {
            let start = p
            while p < bytes.count, !([0x20, 0x09, 0x0A, 0x0D] + Array("=/>".utf8)).contains(bytes[p]) { p += 1 }
            return String(decoding: bytes[start..<p], as: UTF8.self)
        }

        func localName(_ name: String) -> String { name.split(separator: ":").last.map(String.init) ?? name }

        /// Text with its character and entity references decoded.
        func decode(_ slice: ArraySlice<UInt8>) throws -> String {
            let text = String(decoding: slice, as: UTF8.self)
            guard text.contains("&") else { return text }
            var out = ""
            var rest = Substring(text)
            while let amp = rest.firstIndex(of: "&") {
                out += rest[..<amp]
                guard let semi = rest[amp...].firstIndex(of: ";") else {
                    throw Malformed(detail: "an unterminated reference")
                }
                let name = rest[rest.index(after: amp)..<semi]
                switch name {
                case "amp": out += "&"
                case "lt": out += "<"
                case "gt": out += ">"
                case "quot": out += "\""
                case "apos": out += "'"
                default:
                    let hex = name.hasPrefix("#x") || name.hasPrefix("#X")
                    guard name.hasPrefix("#"), let value = UInt32(name.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                        value != 0,
                        let scalar = Unicode.Scalar(value)
                    else { throw Malformed(detail: "an unknown or forbidden reference &\(name);") }
                    out.unicodeScalars.append(scalar)
                }
                rest = rest[rest.index(after: semi)...]
            }
            return out + rest
        }
    }

    /// The element written out as XML: names as they were written, attributes in their order,
    /// text and attribute values escaped (comments and the declaration are not kept).
    var xml: String {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let tag = qualifiedName.isEmpty ? name : qualifiedName
        let attributes = written.map { " \($0.name)=\"\(escaped($0.value))\"" }.joined()
        if children.isEmpty && text.isEmpty { return "<\(tag)\(attributes)/>" }
        return "<\(tag)\(attributes)>" + escaped(text) + children.map(\.xml).joined() + "</\(tag)>"
    }

    /// A copy with `attribute` set (added at the end when it was not there).
    func setting(_ attribute: String, to value: String) -> MarkupElement {
        var copy = self
        var attributes = self.attributes
        attributes[attribute] = value
        copy = MarkupElement(
            name: name, attributes: attributes, children: children, text: text, qualifiedName: qualifiedName,
            written: written.contains { $0.name == attribute }
                ? written.map { $0.name == attribute ? ($0.name, value) : $0 } : written + [(attribute, value)])
        return copy
    }
}
