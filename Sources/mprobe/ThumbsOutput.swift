import Foundation
import MediaKit

/// How a thumbnail set is shown to people (`ThumbnailReport` writes it and is the object for programs).
enum ThumbsOutput {
    static func human(_ set: ThumbnailSet, dir: String) -> String {
        let size = set.thumbnails.first.map { "\($0.width)x\($0.height)" } ?? "-"
        var line = "\(set.input) → \(dir)/: \(set.thumbnails.count) thumbnails \(size)"
        if let first = set.sprites.first, let last = set.sprites.last {
            line +=
                set.sprites.count == 1
                ? ", \(first.fileName)"
                : ", \(set.sprites.count) sprite sheets (\(first.fileName) ... \(last.fileName))"
            let storyboards: [(StoryboardFormat, String)] = [
                (.vtt, "thumbs.vtt"), (.hls, "thumbs.m3u8 (+ thumbs-master.m3u8)"),
                (.dash, "thumbs-adaptationset.xml"),
            ]
            for (format, files) in storyboards where set.storyboards.contains(format) { line += ", " + files }
        }
        line += "\n  fetched: \(set.fetch.requests) requests, \(Console.humanBytes(set.fetch.bytesFetched))"
        return line
    }
}
