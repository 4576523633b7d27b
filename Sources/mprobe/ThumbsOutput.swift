import Foundation
import MediaKit

/// How a thumbnail set is shown to people (`ThumbnailReport` writes it and is the object for programs).
enum ThumbsOutput {
    static func human(_ set: ThumbnailSet, dir: String) -> String {
        let size = set.thumbnails.first.map { "\($0.width)x\($0.height)" } ?? "-"
        var line = "\(set.input) → \(dir)/: \(set.thumbnails.count) thumbnails \(size)"
        switch set.sprites.count {
        case 0: break
        case 1: line += ", sprite.jpg, thumbs.vtt"
        case let n: line += ", \(n) sprite sheets (sprite.jpg ... sprite-\(n).jpg), thumbs.vtt"
        }
        line += "\n  fetched: \(set.fetch.requests) requests, \(Console.humanBytes(set.fetch.bytesFetched))"
        return line
    }
}
