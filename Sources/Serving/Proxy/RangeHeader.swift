/// What a player's `Range` header asks of a resource of known size (RFC 9110, single ranges).
///
/// Read on every proxied request (on the event loop), so over the header's UTF-8 bytes, with no
/// Foundation string work.
enum RangeHeader: Equatable {
    /// No range, or one we answer with the whole body (several ranges, another unit, nonsense).
    case whole
    case part(Range<Int64>)
    /// The range starts at or past the end: 416.
    case unsatisfiable

    init(_ header: String?, size: Int64) {
        self.init(header.flatMap(Spec.init), size: size)
    }

    /// What a header already taken apart asks (the proxy reads it once per request).
    init(_ spec: Spec?, size: Int64) {
        guard let spec else { self = .whole; return }
        guard let start = spec.first else {  // bytes=-n: the last n bytes
            guard let n = spec.last else { self = .whole; return }
            guard n > 0, size > 0 else { self = .unsatisfiable; return }
            self = .part(max(0, size - n)..<size)
            return
        }
        var end = size
        if let last = spec.last {
            guard last >= start else { self = .whole; return }
            end = min(size, last == .max ? size : last + 1)
        } else if spec.lastGiven {
            self = .whole
            return
        }
        guard start < size else { self = .unsatisfiable; return }
        self = .part(start..<end)
    }

    /// The first byte a `Range` header asks for when it says it without knowing the size.
    static func firstByte(_ header: String?) -> Int64? {
        header.flatMap(Spec.init)?.first
    }

    private static let unit = Array("bytes=".utf8)

    /// `bytes=FIRST-LAST` taken apart: either number may be missing (`bytes=-n`, `bytes=n-`).
    /// Digits past Int64 are a position past any resource: saturated, they give 416 as a first
    /// byte and "to the end" as a last byte, as RFC 9110 reads them.
    struct Spec {
        var first: Int64?
        var last: Int64?
        /// Something stood after the dash that is not a number.
        var lastGiven = false

        /// nil for another unit, several ranges, or no dash.
        init?(_ header: String) {
            var bytes = Array(header.utf8)[...]
            RangeHeader.trim(&bytes)
            let unit = RangeHeader.unit
            guard bytes.count >= unit.count,
                zip(bytes.prefix(unit.count), unit).allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 })
            else { return nil }
            bytes = bytes.dropFirst(unit.count)
            RangeHeader.trim(&bytes)
            guard !bytes.contains(UInt8(ascii: ",")), let dash = bytes.firstIndex(of: UInt8(ascii: "-")) else {
                return nil
            }
            var firstText = bytes[..<dash], lastText = bytes[(dash + 1)...]
            RangeHeader.trim(&firstText)
            RangeHeader.trim(&lastText)
            if !firstText.isEmpty {
                guard let n = RangeHeader.number(firstText) else { return nil }
                first = n
            }
            if !lastText.isEmpty {
                last = RangeHeader.number(lastText)
                lastGiven = last == nil
                // `bytes=-x` with nonsense after the dash, or `bytes=` alone: no range.
                if last == nil && first == nil { return nil }
            }
            if first == nil && last == nil { return nil }
        }
    }

    private static func trim(_ bytes: inout ArraySlice<UInt8>) {
        while let b = bytes.first, b == 0x20 || b == 0x09 { bytes = bytes.dropFirst() }
        while let b = bytes.last, b == 0x20 || b == 0x09 { bytes = bytes.dropLast() }
    }

    /// Decimal digits only, saturating at Int64.max; nil for anything else.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for b in digits {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int64(b - 0x30))
            if o1 || o2 { return .max }
            value = sum
        }
        return value
    }
}
