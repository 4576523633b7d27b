import FFmpeg

/// A storyboard format: where a player finds each thumbnail on the sprite sheets.
public enum StoryboardFormat: String, Sendable, CaseIterable {
    /// `thumbs.vtt`: a cue per thumbnail, `sprite.jpg#xywh=...` (JW Player, Video.js, Mux).
    case vtt
    /// `thumbs.m3u8`: an HLS image media playlist, `#EXT-X-TILES` per sheet (Roku, Apple's spec).
    case hls
    /// `thumbs-adaptationset.xml`: a DASH-IF thumbnail AdaptationSet (dash.js, Shaka).
    case dash

    /// Sheets a streaming player decodes: at most this many pixels a side (TV players' image decoders).
    public static let streamingSheetSide = 4096
}

/// What thumbnails to make.
public struct ThumbnailOptions: Sendable {
    public enum Times: Sendable, Equatable {
        /// 0, S, 2S, ... below the duration.
        case every(Double)
        /// N times spread evenly: i × duration / N.
        case count(Int)
        /// These times, in seconds.
        case at([Double])
    }

    public var times: Times = .count(20)
    /// At most this many thumbnails per input, however the times are given (the service lowers it
    /// to keep a job within its limit).
    public static let maxCount = 10_000
    public var limit = ThumbnailOptions.maxCount
    /// Output size; with neither set the width is 320 and the height keeps the display aspect;
    /// with both the picture fits inside the box.
    public var width: Int?
    public var height: Int?
    public var format: ImageFormat = .jpg
    public var quality = 80
    /// Decode from the key frame up to the exact time instead of taking the key frame itself.
    public var accurate = false
    /// Sprite sheets (JPEG) composed as the thumbnails are made, with a WebVTT storyboard; nil for none.
    public var sprite: SpriteLayout?
    /// The storyboards written beside the sheets: WebVTT, and for streaming players an HLS image
    /// playlist and a DASH thumbnail AdaptationSet.
    public var storyboards: Set<StoryboardFormat> = [.vtt]
    /// A key frame that is nearly black or flat gives way to the next one (`BlankFrames`).
    public var skipBlack = false

    public init() {}

    /// The requested times for a video of `duration` seconds.
    /// The times depend on the duration (`--count`, `--every`), not only on a list.
    var spreadsOverTheDuration: Bool {
        if case .at = times { return false }
        return true
    }

    func requestedTimes(duration: Double) -> [Double] {
        let limit = max(1, min(self.limit, ThumbnailOptions.maxCount))
        switch times {
        case .every(let step):
            guard step > 0 else { return [0] }
            return Array(stride(from: 0, to: max(duration, step / 2), by: step).prefix(limit))
        case .count(let n):
            guard n > 0 else { return [] }
            return (0..<min(n, limit)).map { Double($0) * duration / Double(n) }
        case .at(let list):
            return Array(list.prefix(limit))
        }
    }

    /// What the limit left out of the requested times, in words; nil when nothing.
    func limitNote(duration: Double) -> String? {
        let limit = max(1, min(self.limit, ThumbnailOptions.maxCount))
        let asked: Double
        switch times {
        case .every(let step): asked = step > 0 ? (max(duration, step / 2) / step).rounded(.up) : 1
        case .count(let n): asked = Double(n)
        case .at(let list): asked = Double(list.count)
        }
        guard asked > Double(limit) else { return nil }
        return String(format: "%.0f thumbnails asked for, the first %d made (the limit)", asked, limit)
    }

    /// Why the sprite grid cannot be made, or nil: checked before any work, with the requested
    /// thumbnail size (a side not given follows a 16:9 picture, e.g. the default 320x180).
    public var spriteProblem: String? {
        let (width, height) = outputSize(displayWidth: 16, displayHeight: 9)
        return sprite?.problem(cellWidth: width, cellHeight: height)
    }

    /// Output size for a picture displayed at `displayWidth` × `displayHeight`: even numbers, as
    /// 4:2:0 encoders want.
    func outputSize(displayWidth: Double, displayHeight: Double) -> (Int, Int) {
        func even(_ v: Double) -> Int { max(2, Int((min(v, 8192) / 2).rounded()) * 2) }  // bounded memory
        let aspect = displayWidth / max(displayHeight, 1)
        switch (width, height) {
        case let (w?, h?):
            return Double(w) / Double(h) > aspect
                ? (even(Double(h) * aspect), even(Double(h))) : (even(Double(w)), even(Double(w) / aspect))
        case let (w?, nil): return (even(Double(w)), even(Double(w) / aspect))
        case let (nil, h?): return (even(Double(h) * aspect), even(Double(h)))
        case (nil, nil): return (320, even(320 / aspect))
        }
    }
}
