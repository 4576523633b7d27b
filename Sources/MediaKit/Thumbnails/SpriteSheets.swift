import FFmpeg

/// Where a thumbnail sits on a sprite sheet.
public struct SpriteCell: Sendable, Equatable {
    /// The sheet's file name, e.g. `sprite-2.jpg`.
    public let sheet: String
    public let x: Int
    public let y: Int
    public let width: Int
    public let height: Int

    /// `sprite-2.jpg#xywh=0,90,160,90`: how a WebVTT storyboard points at the cell.
    public var fragment: String { "\(sheet)#xywh=\(x),\(y),\(width),\(height)" }
}

/// One encoded sprite sheet.
public struct SpriteSheet: Sendable {
    public let fileName: String
    public let width: Int
    public let height: Int
    public let encoded: [UInt8]
}

/// Sprite sheets composed as thumbnails arrive: each picture is drawn into the current sheet (kept
/// in the JPEG encoder's YUV 4:2:0 frame, half the size of RGB), and a full sheet is encoded and
/// released — memory holds one sheet plus the encoded files, however many thumbnails there are.
///
/// The cell size is the first picture's; a later picture of another size is scaled into its cell.
/// Sheets are named `sprite.jpg`, `sprite-2.jpg`, ...; the last holds only what is left (fewer rows,
/// and fewer columns when one row is enough).
struct SpriteSheets {
    let layout: SpriteLayout
    /// How many thumbnails will be added: sizes the automatic grid and the last sheet.
    let count: Int
    let quality: Int
    private(set) var sheets: [SpriteSheet] = []
    /// Cells a sheet and their size: fixed by the first picture.
    private var grid: (columns: Int, rows: Int, cellWidth: Int, cellHeight: Int)?
    /// The sheet being drawn: the encoder's frame, the first thumbnail on it and how many it takes.
    private var current: Canvas?
    private var added = 0
    private let scaler = Scaler()

    /// Every sheet the full grid, the last one too (its unused cells black): streaming players
    /// find a tile from the grid and the sheet's size, the same for every sheet.
    let uniform: Bool

    init(layout: SpriteLayout, count: Int, quality: Int, uniform: Bool = false) {
        self.layout = layout
        self.count = count
        self.quality = quality
        self.uniform = uniform
    }

    /// Draws `image` into the next cell, encoding the sheet when it is full.
    mutating func add(_ image: RGBImage) throws -> SpriteCell {
        let grid =
            self.grid
            ?? {
                let (columns, rows) = layout.cellsPerSheet(
                    count: count, cellWidth: image.width, cellHeight: image.height)
                return (columns, rows, image.width, image.height)
            }()
        self.grid = grid
        let sheet = try current ?? startSheet(grid)
        current = sheet
        let index = added - sheet.first
        let cell = SpriteCell(
            sheet: SpriteSheets.name(sheets.count), x: index % grid.columns * grid.cellWidth,
            y: index / grid.columns * grid.cellHeight, width: grid.cellWidth, height: grid.cellHeight)
        try scaler.draw(image, into: sheet.frame, x: cell.x, y: cell.y, width: cell.width, height: cell.height)
        added += 1
        if added - sheet.first == sheet.cells { try finishSheet() }
        return cell
    }

    /// Encodes the sheet in progress, if any (when fewer thumbnails came than announced).
    mutating func finish() throws {
        if current != nil { try finishSheet() }
    }

    private struct Canvas {
        let encoder: FrameEncoder
        let frame: Frame
        let first: Int
        let cells: Int
    }

    private func startSheet(_ grid: (columns: Int, rows: Int, cellWidth: Int, cellHeight: Int)) throws -> Canvas {
        let cells = min(grid.columns * grid.rows, max(1, count - added))
        let columns = uniform ? grid.columns : min(cells, grid.columns)
        let rows = uniform ? grid.rows : (cells + grid.columns - 1) / grid.columns
        let encoder = try FrameEncoder(
            format: .jpg, width: columns * grid.cellWidth, height: rows * grid.cellHeight,
            quality: quality)
        let frame = try encoder.makeFrame()
        try frame.fillBlack()
        return Canvas(encoder: encoder, frame: frame, first: added, cells: cells)
    }

    private mutating func finishSheet() throws {
        guard let sheet = current else { return }
        current = nil  // released once encoded: the next sheet starts afresh
        sheets.append(
            SpriteSheet(
                fileName: SpriteSheets.name(sheets.count), width: sheet.encoder.width,
                height: sheet.encoder.height, encoded: try sheet.encoder.encode(sheet.frame)))
    }

    static func name(_ index: Int) -> String { index == 0 ? "sprite.jpg" : "sprite-\(index + 1).jpg" }
}
