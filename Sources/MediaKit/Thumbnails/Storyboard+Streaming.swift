import Foundation

/// Storyboards for streaming players: an HLS image playlist and a DASH thumbnail AdaptationSet
/// over the same sprite sheets as the WebVTT one. Both place tiles by a fixed duration on sheets
/// of one grid (`SpriteSheets.uniform`).
extension Storyboard {
    /// The tiles of a set: their size, the grid, and the seconds each covers (the thumbnails'
    /// spacing), and per sheet its file, bytes, first time and end. Nil without sheets.
    struct Tiles {
        let width: Int
        let height: Int
        let columns: Int
        let rows: Int
        let seconds: Double
        let sheets: [(file: String, bytes: Int, start: Double, end: Double)]

        init?(_ set: ThumbnailSet) {
            guard let cell = set.thumbnails.first(where: { $0.sprite != nil })?.sprite, let first = set.sprites.first
            else { return nil }
            (width, height) = (cell.width, cell.height)
            (columns, rows) = (max(1, first.width / cell.width), max(1, first.height / cell.height))
            let times = set.thumbnails.map(\.time)
            seconds = times.count > 1 ? max(0.001, times[1] - times[0]) : max(0.001, set.duration ?? 1)
            let end = set.duration ?? (times.last ?? 0) + seconds
            var sheets: [(String, Int, Double, Double)] = []
            for sheet in set.sprites {
                let on = set.thumbnails.filter { $0.sprite?.sheet == sheet.fileName }.map(\.time)
                guard let start = on.first else { continue }
                sheets.append(
                    (
                        sheet.fileName, sheet.encoded.count, start,
                        max(start + 0.001, min(end, (on.last ?? start) + seconds))
                    ))
            }
            self.sheets = sheets
        }

        /// The densest sheet's bits per second: what a player must fetch to keep up.
        var peakBitRate: Int {
            Int((sheets.map { Double($0.bytes * 8) / ($0.end - $0.start) }.max() ?? 0).rounded(.up))
        }
    }

    /// An HLS image media playlist (`#EXT-X-IMAGES-ONLY`): each sheet a segment whose
    /// `#EXT-X-TILES` says the tile size, the grid and each tile's duration.
    public static func hls(_ set: ThumbnailSet) -> String? {
        guard let tiles = Tiles(set) else { return nil }
        let longest = tiles.sheets.map { $0.end - $0.start }.max() ?? tiles.seconds
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(Int(longest.rounded(.up)))",
            "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-IMAGES-ONLY",
        ]
        for sheet in tiles.sheets {
            lines.append(
                String(
                    format: "#EXT-X-TILES:RESOLUTION=%dx%d,LAYOUT=%dx%d,DURATION=%.3f",
                    tiles.width, tiles.height, tiles.columns, tiles.rows, tiles.seconds))
            lines.append(String(format: "#EXTINF:%.3f,", sheet.end - sheet.start))
            lines.append(sheet.file)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A master playlist offering `playlist` (the image playlist): its `#EXT-X-IMAGE-STREAM-INF`
    /// line goes into the stream's own master.
    public static func hlsMaster(_ set: ThumbnailSet, playlist: String) -> String? {
        guard let tiles = Tiles(set) else { return nil }
        return
            "#EXTM3U\n#EXT-X-IMAGE-STREAM-INF:BANDWIDTH=\(tiles.peakBitRate),RESOLUTION=\(tiles.width)x\(tiles.height),"
            + "CODECS=\"jpeg\",URI=\"\(playlist)\"\n"
    }

    /// A DASH thumbnail AdaptationSet (DASH-IF's thumbnail tiles): sheets `sprite-1.jpg`,
    /// `sprite-2.jpg`, ... each covering the grid's tiles.
    public static func dash(_ set: ThumbnailSet) -> String? {
        guard let tiles = Tiles(set), let first = set.sprites.first else { return nil }
        let sheetMilliseconds = Int((Double(tiles.columns * tiles.rows) * tiles.seconds * 1000).rounded())
        return [
            "<AdaptationSet id=\"thumbnails\" contentType=\"image\" mimeType=\"image/jpeg\">",
            "  <SegmentTemplate media=\"sprite-$Number$.jpg\" timescale=\"1000\" duration=\"\(sheetMilliseconds)\" startNumber=\"1\"/>",
            "  <Representation id=\"thumbnails-\(tiles.width)x\(tiles.height)\" bandwidth=\"\(tiles.peakBitRate)\" "
                + "width=\"\(first.width)\" height=\"\(first.height)\">",
            "    <EssentialProperty schemeIdUri=\"http://dashif.org/guidelines/thumbnail_tile\" value=\"\(tiles.columns)x\(tiles.rows)\"/>",
            "  </Representation>",
            "</AdaptationSet>", "",
        ].joined(separator: "\n")
    }
}
