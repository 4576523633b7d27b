import Foundation

/// A sprite sheet of thumbnails and the WebVTT storyboard that points into it
/// (`sprite.jpg#xywh=x,y,w,h` per cue, as JW Player, Video.js plugins and Mux read it).
public struct Storyboard: Sendable {
    public let columns: Int
    public let rows: Int
    public let sprite: RGBImage
    public let vtt: String

    /// `layout` is (columns, rows); nil picks a square-ish grid. The cells are the first
    /// thumbnail's size; each cue runs from its time to the next thumbnail's (the last to `duration`).
    public init(thumbnails: [Thumbnail], duration: Double?, layout: (Int, Int)?, spriteName: String) throws {
        guard let first = thumbnails.first?.picture, thumbnails.allSatisfy({ $0.picture != nil }) else {
            throw MediaError.noTracks(detail: "no decoded pictures for a sprite (ThumbnailOptions.keepPictures)")
        }
        let n = thumbnails.count
        let columns = layout?.0 ?? Int(Double(n).squareRoot().rounded(.up))
        let rows = layout?.1 ?? (n + columns - 1) / columns
        guard columns * rows >= n else {
            throw MediaError.malformed(input: "sprite", detail: "a \(columns)x\(rows) grid cannot hold \(n) thumbnails")
        }
        let (w, h) = (first.width, first.height)
        var sprite = RGBImage(width: columns * w, height: rows * h)
        var cues = ["WEBVTT", ""]
        let times = thumbnails.map(\.time)
        for (i, thumb) in thumbnails.enumerated() {
            let (x, y) = (i % columns * w, i / columns * h)
            if let picture = thumb.picture { sprite.paste(picture, x: x, y: y) }
            let end = i + 1 < n ? times[i + 1] : max(duration ?? thumb.time + 1, thumb.time + 0.001)
            cues.append("\(Storyboard.clock(thumb.time)) --> \(Storyboard.clock(max(end, thumb.time + 0.001)))")
            cues.append("\(spriteName)#xywh=\(x),\(y),\(w),\(h)")
            cues.append("")
        }
        self.columns = columns
        self.rows = rows
        self.sprite = sprite
        vtt = cues.joined(separator: "\n")
    }

    /// `HH:MM:SS.mmm`.
    static func clock(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }

    public func encodedSprite(quality: Int) throws -> [UInt8] {
        try ImageEncoder.encode(sprite, as: .jpg, quality: quality)
    }
}
