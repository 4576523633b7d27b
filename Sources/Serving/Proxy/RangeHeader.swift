import Foundation

/// What a player's `Range` header asks of a resource of known size (RFC 9110, single ranges).
enum RangeHeader: Equatable {
    /// No range, or one we answer with the whole body (several ranges, another unit, nonsense).
    case whole
    case part(Range<Int64>)
    /// The range starts at or past the end: 416.
    case unsatisfiable

    init(_ header: String?, size: Int64) {
        guard let header else { self = .whole; return }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { self = .whole; return }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { self = .whole; return }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        // Digits past Int64 are a position past any resource: saturated, they give 416 as a
        // first byte and "to the end" as a last byte, as RFC 9110 reads them.
        func number(_ text: String) -> Int64? {
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int64(text) ?? .max
        }
        if first.isEmpty {  // bytes=-n: the last n bytes
            guard let n = number(last) else { self = .whole; return }
            guard n > 0, size > 0 else { self = .unsatisfiable; return }
            self = .part(max(0, size - n)..<size)
            return
        }
        guard let start = number(first) else { self = .whole; return }
        var end = size
        if !last.isEmpty {
            guard let l = number(last), l >= start else { self = .whole; return }
            end = min(size, l.addingReportingOverflow(1).overflow ? size : l + 1)
        }
        guard start < size else { self = .unsatisfiable; return }
        self = .part(start..<end)
    }
}
