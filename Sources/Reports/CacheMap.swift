import Foundation
import MediaKit

/// A cached resource drawn as text, one line per axis: its bytes over the file's length (cached,
/// missing, the moov's place) with the share cached, then each track's buffered time over the
/// duration with the seconds buffered. `mprobe cache ranges` prints it; the bars line up, so a
/// window of bytes and the window of time it holds can be read one above the other.
///
/// ```
/// bytes     ####+.......................M  62.1%
/// #0 video  ###########+................   1.0 s
/// ```
public enum CacheMap {
    /// Unicode block characters for a UTF-8 terminal; ASCII anywhere else.
    public enum Charset: Sendable {
        case unicode, ascii

        var full: Character { self == .unicode ? "█" : "#" }
        var partial: Character { self == .unicode ? "▒" : "+" }
        var empty: Character { self == .unicode ? "░" : "." }
    }

    /// The moov's cells: `M` when all of the moov is cached, `m` when some of it is missing.
    static let moovCached: Character = "M"
    static let moovMissing: Character = "m"

    /// The narrowest bar drawn, whatever the width asked for.
    static let minimumBar = 10

    /// The map's lines, each at most `width` columns (unless `width` leaves less than
    /// `minimumBar` for a bar). `ranges` are the cached byte ranges (sorted, disjoint, ends
    /// exclusive) of a resource of `size` bytes; `media`, when its header is cached, adds the
    /// moov's place and a line per track over its duration.
    public static func lines(
        size: Int64, ranges: [Range<Int64>], media: CachedMedia?, width: Int,
        charset: Charset
    ) -> [String] {
        let cached = ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
        var rows: [(label: String, covered: [Range<Double>], length: Double, suffix: String)] = [
            (
                "bytes", ranges.map { Double($0.lowerBound)..<Double($0.upperBound) }, Double(size),
                percent(cached, of: size)
            )
        ]
        let tracks = media?.tracks ?? []
        // A duration the container does not state is at least as long as what is buffered.
        let duration = media?.duration ?? tracks.flatMap(\.ranges).map(\.upperBound).max() ?? 0
        if duration > 0 {
            for t in tracks {
                let seconds = t.ranges.reduce(0) { $0 + $1.upperBound - $1.lowerBound }
                rows.append(("#\(t.index) \(t.kind.rawValue)", t.ranges, duration, String(format: "%.1f s", seconds)))
            }
        }
        let labelWidth = rows.map(\.label.count).max() ?? 0
        let suffixWidth = rows.map(\.suffix.count).max() ?? 0
        let barWidth = max(minimumBar, width - labelWidth - suffixWidth - 2)
        return rows.enumerated().map { i, row in
            var cells = bar(row.covered, length: row.length, width: barWidth, charset: charset)
            if i == 0, let moov = media?.moov { mark(moov, ranges: ranges, size: size, in: &cells) }
            return pad(row.label, to: labelWidth) + " " + String(cells) + " "
                + String(repeating: " ", count: suffixWidth - row.suffix.count) + row.suffix
        }
    }

    /// `width` cells over `0..<length`: full where `covered` covers the cell's whole span, partial
    /// where it covers some of it, empty where none. `covered` is sorted and disjoint.
    static func bar(_ covered: [Range<Double>], length: Double, width: Int, charset: Charset) -> [Character] {
        guard length > 0 else { return Array(repeating: charset.full, count: width) }
        var cells: [Character] = []
        cells.reserveCapacity(width)
        var first = 0  // the first range that may reach into this cell or a later one
        for i in 0..<width {
            let lower = length * Double(i) / Double(width), upper = length * Double(i + 1) / Double(width)
            while first < covered.count && covered[first].upperBound <= lower { first += 1 }
            var inside = 0.0
            var j = first
            while j < covered.count && covered[j].lowerBound < upper {
                inside += min(upper, covered[j].upperBound) - max(lower, covered[j].lowerBound)
                j += 1
            }
            // Cell bounds and range ends are the same doubles where a range covers a cell exactly,
            // so a whole cell adds up exactly; the tolerance only absorbs sums of several ranges.
            let span = upper - lower
            cells.append(inside <= 0 ? charset.empty : inside >= span * (1 - 1e-9) ? charset.full : charset.partial)
        }
        return cells
    }

    /// Puts `M` (all cached) or `m` (some missing) on every cell the moov's bytes fall in, at
    /// least one, so that its place shows however small it is.
    static func mark(_ moov: Range<Int64>, ranges: [Range<Int64>], size: Int64, in cells: inout [Character]) {
        guard size > 0, !cells.isEmpty, !moov.isEmpty, moov.lowerBound < size else { return }
        let whole = ranges.contains { $0.lowerBound <= moov.lowerBound && $0.upperBound >= moov.upperBound }
        let count = Int64(cells.count)
        let first = Int(moov.lowerBound * count / size)
        let last = Int(min(count - 1, (min(moov.upperBound, size) * count - 1) / size))
        for i in first...max(first, last) { cells[i] = whole ? moovCached : moovMissing }
    }

    /// The share of `size` cached, to a tenth of a percent, rounded down: 100.0% only when every
    /// byte is there, and never 0.0% when any is.
    static func percent(_ cached: Int64, of size: Int64) -> String {
        guard size > 0 else { return "100.0%" }
        let tenths = cached * 1000 / size
        return String(format: "%.1f%%", Double(cached > 0 ? max(1, tenths) : 0) / 10)
    }

    private static func pad(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
