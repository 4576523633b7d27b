/// How thumbnails are laid out on sprite sheets, and how big a sheet may be.
///
/// A sheet is bounded so that it can be encoded and held in memory: FFmpeg's JPEG encoder takes at
/// most 65500 pixels a side (the format's 16-bit fields, less its own margin), and one sheet is at most as many pixels as the largest thumbnail (8192 × 8192), about
/// 96 MB while composed. A grid that cannot fit is refused before any work (`problem`); when the
/// real thumbnail size turns out larger than requested, a sheet takes fewer cells and the rest go
/// on further sheets rather than failing.
public enum SpriteLayout: Sendable, Equatable {
    /// A square-ish grid for the number of thumbnails: one sheet when the bounds allow.
    case automatic
    /// At most `columns` × `rows` thumbnails a sheet; more go on further sheets.
    case grid(columns: Int, rows: Int)

    /// FFmpeg's JPEG encoder refuses larger sides ("JPEG does not support resolutions above 65500x65500").
    public static let maxSide = 65_500
    /// 8192 × 8192: the largest thumbnail (`ThumbnailOptions.outputSize`) always fits on a sheet.
    public static let maxPixels = 1 << 26

    /// Why a sheet of this grid cannot be made from thumbnails of `cellWidth` × `cellHeight`, or
    /// nil when it can. The sentence says the limits, for a usage error.
    public func problem(cellWidth: Int, cellHeight: Int) -> String? {
        guard case .grid(let columns, let rows) = self else { return nil }
        let (width, wide) = columns.multipliedReportingOverflow(by: cellWidth)
        let (height, tall) = rows.multipliedReportingOverflow(by: cellHeight)
        let (pixels, huge) = width.multipliedReportingOverflow(by: height)
        guard
            wide || tall || huge || width > SpriteLayout.maxSide || height > SpriteLayout.maxSide
                || pixels > SpriteLayout.maxPixels
        else { return nil }
        let size = wide || tall ? "an impossibly large" : "a \(width)x\(height)"
        return
            "a \(columns)x\(rows) grid of \(cellWidth)x\(cellHeight) thumbnails makes \(size) sheet; a sheet may be at most "
            + "\(SpriteLayout.maxSide) pixels a side and \(SpriteLayout.maxPixels) pixels in all (8192x8192)"
    }

    /// Cells a sheet: the grid asked for (or a square-ish one for `count` thumbnails), made
    /// smaller where thumbnails of `cellWidth` × `cellHeight` would break the sheet bounds.
    func cellsPerSheet(count: Int, cellWidth: Int, cellHeight: Int) -> (columns: Int, rows: Int) {
        var (columns, rows): (Int, Int)
        switch self {
        case .automatic:
            columns = max(1, Int(Double(max(1, count)).squareRoot().rounded(.up)))
            rows = (max(1, count) + columns - 1) / columns
        case .grid(let c, let r):
            (columns, rows) = (max(1, c), max(1, r))
        }
        let cellPixels = max(1, cellWidth * cellHeight)
        columns = max(1, min(columns, SpriteLayout.maxSide / max(1, cellWidth), SpriteLayout.maxPixels / cellPixels))
        rows = max(
            1, min(rows, SpriteLayout.maxSide / max(1, cellHeight), SpriteLayout.maxPixels / (columns * cellPixels)))
        return (columns, rows)
    }
}
