import Foundation
import MediaKit

/// How a thumbnail set is shown to people (`ThumbnailReport` writes it and is the object for programs).
enum ThumbsOutput {
    static func human(_ set: ThumbnailSet, dir: String) -> String {
        let size = set.thumbnails.first.map { "\($0.width)x\($0.height)" } ?? "-"
        var line = "\(set.input) → \(dir)/: \(set.thumbnails.count) thumbnails \(size)"
        if let first = set.sprites.first, let last = set.sprites.last {
            line += set.sprites.count == 1 ? ", \(first.fileName)"
                : ", \(set.sprites.count) sprite sheets (\(first.fileName) ... \(last.fileName))"
            line += ", thumbs.vtt"
        }
        line += "\n  fetched: \(set.fetch.requests) requests, \(Console.humanBytes(set.fetch.bytesFetched))"
        return line
    }
}
