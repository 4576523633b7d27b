import Caching

/// How a resource whose origin sends neither ETag nor Last-Modified keeps one version per byte.
/// Its size is then the only validator, and a new version of the same size would otherwise be
/// stored next to the old one. So each request for missing bytes also asks for up to `overlap`
/// bytes on either side that are stored already, and compares them with what arrives: the size
/// and those bytes together are the validator. The bytes before the gap come first in the body,
/// so a difference there is found before any new byte is stored; the bytes after it come last,
/// so readers wait at the gap's end (`RunningFetch.barrier`) until they have been compared, and the
/// gap's last bytes are stored only then (`HeldTail`). A difference drops every stored byte
/// (`RangeStore.dropVersion`): readers that used the old ones see another generation and fail with
/// `SourceError.versionChanged`, as for a changed ETag.
///
/// Every place where bytes of two responses meet is such an overlap: fetches of such a resource
/// never run side by side within `overlap` of each other — in one process `RemoteResource.fetch`
/// waits, across processes sharing a cache the fetch claims `overlap` past both ends of its gap
/// (`margin`) — so each new one finds its neighbours stored (committed, for another process's).
struct OverlapCheck {
    /// Bytes compared on each side.
    static let overlap: Int64 = 4 << 10

    /// The missing bytes this request is for.
    let core: Range<Int64>
    /// What is asked of the origin: `core` and the stored bytes around it.
    let request: Range<Int64>

    /// The check for fetching `core` of a resource with these validators and stored ranges; nil
    /// when the resource has a validator of its own. Before the first answer there is none yet:
    /// the check then compares only what a resumed transfer brings twice (`RangeFetcher`'s
    /// `resumeOverlap`), as it does wherever nothing is stored around `core`.
    init?(core: Range<Int64>, validators: ResourceValidators, stored: ByteRangeSet) {
        guard validators.etag == nil, validators.lastModified == nil else { return nil }
        let before =
            stored.ranges.first { $0.contains(core.lowerBound - 1) }.map {
                min(OverlapCheck.overlap, core.lowerBound - $0.lowerBound)
            } ?? 0
        let after = min(OverlapCheck.overlap, stored.coveredLength(from: core.upperBound))
        self.core = core
        request = core.lowerBound - before..<core.upperBound + after
    }

    /// How far past a gap's ends a fetch of a resource with these validators claims its bytes
    /// from other processes sharing the cache: `overlap` without a validator, else nothing.
    static func margin(for validators: ResourceValidators) -> Int64 {
        validators.etag == nil && validators.lastModified == nil ? overlap : 0
    }

    /// Whether a fetch of `range` of a validator-less resource must wait for a running fetch of
    /// `other`: within `overlap` of each other, they would store bytes of two responses side by
    /// side with nothing compared between them.
    static func mustWait(_ range: Range<Int64>, for other: Range<Int64>) -> Bool {
        range.lowerBound < other.upperBound + overlap && other.lowerBound < range.upperBound + overlap
    }

    /// What to do with a piece of the body: compare its parts that are stored (`available` now),
    /// store its other parts up to the end of `core` (a server that ignores ranges sends more from
    /// 0: that is stored too), and drop what lies past.
    func parts(of piece: Range<Int64>, available: ByteRangeSet) -> (compare: [Range<Int64>], store: [Range<Int64>]) {
        let used = piece.clamped(to: 0..<request.upperBound)
        guard !used.isEmpty else { return ([], []) }
        let missing = available.gaps(in: used)
        var compare: [Range<Int64>] = [], start = used.lowerBound
        for gap in missing {
            if gap.lowerBound > start { compare.append(start..<gap.lowerBound) }
            start = gap.upperBound
        }
        if start < used.upperBound { compare.append(start..<used.upperBound) }
        return (compare, missing.map { $0.clamped(to: 0..<core.upperBound) }.filter { !$0.isEmpty })
    }
}

/// The last `OverlapCheck.overlap` bytes of a gap that has stored bytes after it, kept in memory
/// until those stored bytes have been compared with the ones the transfer brings after the gap.
/// Stored at once, they would lie against bytes nothing compared them with whenever the transfer
/// ends before its last bytes (the reader left while the origin stalled, the origin failed): the
/// gap left instead is fetched later with overlaps on both sides.
struct HeldTail {
    let range: Range<Int64>
    private(set) var bytes: [UInt8]
    private var filled = ByteRangeSet()

    init?(_ check: OverlapCheck) {
        guard check.request.upperBound > check.core.upperBound else { return nil }
        range = max(check.core.lowerBound, check.core.upperBound - OverlapCheck.overlap)..<check.core.upperBound
        bytes = [UInt8](repeating: 0, count: range.count)
    }

    /// Keeps `slice`, the bytes at `offset` (within `range`).
    mutating func hold(_ slice: UnsafeRawBufferPointer, at offset: Int64) {
        bytes.withUnsafeMutableBytes {
            ($0.baseAddress! + Int(offset - range.lowerBound)).copyMemory(
                from: slice.baseAddress!, byteCount: slice.count)
        }
        filled.insert(offset..<offset + Int64(slice.count))
    }

    var isComplete: Bool { filled.coveredLength(from: range.lowerBound) >= Int64(range.count) }
}

/// Bytes that arrived for an overlap differ from the stored ones: the origin changed.
struct OverlapMismatch: Error {
    let offset: Int64
}
