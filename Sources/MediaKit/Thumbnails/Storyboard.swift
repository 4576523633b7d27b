import Foundation

/// The WebVTT storyboard that points into the sprite sheets (`sprite.jpg#xywh=x,y,w,h` per cue,
/// as JW Player, Video.js plugins and Mux read it).
public enum Storyboard {
    /// One cue per thumbnail placed on a sheet, from its time to the next thumbnail's (the last
    /// to `duration`, or a second); nil when no thumbnail is on a sheet.
    public static func vtt(_ thumbnails: [Thumbnail], duration: Double?) -> String? {
        guard thumbnails.contains(where: { $0.sprite != nil }) else { return nil }
        var cues = ["WEBVTT", ""]
        for (i, thumb) in thumbnails.enumerated() {
            guard let cell = thumb.sprite else { continue }
            let end = i + 1 < thumbnails.count ? thumbnails[i + 1].time : duration ?? thumb.time + 1
            cues.append("\(clock(thumb.time)) --> \(clock(max(end, thumb.time + 0.001)))")
            cues.append(cell.fragment)
            cues.append("")
        }
        return cues.joined(separator: "\n")
    }

    /// `HH:MM:SS.mmm`.
    static func clock(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        return String(format: "%02d:%02d:%02d.%03d", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }
}
