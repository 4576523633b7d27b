import Foundation
import MediaKit

/// Writing a thumbnail set to a folder (pictures, manifest.json, sprite and VTT) and reporting it.
enum ThumbsOutput {
    static func write(_ set: ThumbnailSet, to dir: String, sprite: (Int, Int)??) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for t in set.thumbnails {
            try Data(t.encoded).write(to: URL(fileURLWithPath: dir + "/" + t.fileName))
        }
        var spriteName: String?, vttName: String?
        if let layout = sprite {
            let board = try Storyboard(thumbnails: set.thumbnails, duration: set.duration, layout: layout, spriteName: "sprite.jpg")
            try Data(try board.encodedSprite(quality: 80)).write(to: URL(fileURLWithPath: dir + "/sprite.jpg"))
            try Data(board.vtt.utf8).write(to: URL(fileURLWithPath: dir + "/thumbs.vtt"))
            (spriteName, vttName) = ("sprite.jpg", "thumbs.vtt")
        }
        try Data((manifest(set, sprite: spriteName, vtt: vttName).text + "\n").utf8)
            .write(to: URL(fileURLWithPath: dir + "/manifest.json"))
    }

    static func manifest(_ set: ThumbnailSet, sprite: String?, vtt: String?) -> JSON {
        .object([
            ("url", .string(set.input)),
            ("thumbnails", .array(set.thumbnails.map { t in
                .object([("time", .double(PrefetchOutput.ms(t.time))), ("pts", .double(PrefetchOutput.ms(t.pts))),
                         ("file", .string(t.fileName)), ("width", .int(t.width)), ("height", .int(t.height))])
            })),
            ("sprite", .optional(sprite)), ("vtt", .optional(vtt)),
        ])
    }

    static func json(_ set: ThumbnailSet, dir: String, sprite: Bool) -> JSON {
        guard case .object(var members) = manifest(set, sprite: sprite ? "sprite.jpg" : nil, vtt: sprite ? "thumbs.vtt" : nil)
        else { return .null }
        members.append(("dir", .string(dir)))
        members.append(("notes", .array(set.notes.map { .string($0) })))
        members.append(("fetch", .object([("requests", .int(set.fetch.requests)), ("bytes_fetched", .int(set.fetch.bytesFetched)),
                                          ("floor_bytes", .int(set.floorBytes))])))
        return .object(members)
    }

    static func human(_ set: ThumbnailSet, dir: String, sprite: Bool) -> String {
        let size = set.thumbnails.first.map { "\($0.width)x\($0.height)" } ?? "-"
        var line = "\(set.input) → \(dir)/: \(set.thumbnails.count) thumbnails \(size)"
        if sprite { line += ", sprite.jpg, thumbs.vtt" }
        line += "\n  fetched: \(set.fetch.requests) requests, \(Console.humanBytes(set.fetch.bytesFetched))"
        return line
    }
}
