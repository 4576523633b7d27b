import Foundation
import MediaKit

/// A thumbnail set on disk (pictures, `manifest.json`, sprite and VTT) and as the object
/// `mprobe thumbs --json` and a thumbnail job's result show.
public enum ThumbnailReport {
    public static func write(_ set: ThumbnailSet, to dir: String, sprite: (Int, Int)??) throws {
        let folder = OutputFolder(dir)
        try folder.create()
        for t in set.thumbnails { try folder.write(t.encoded, to: t.fileName) }
        var spriteName: String?, vttName: String?
        if let layout = sprite {
            let board = try Storyboard(thumbnails: set.thumbnails, duration: set.duration, layout: layout, spriteName: "sprite.jpg")
            try folder.write(try board.encodedSprite(quality: 80), to: "sprite.jpg")
            try folder.write(Array(board.vtt.utf8), to: "thumbs.vtt")
            (spriteName, vttName) = ("sprite.jpg", "thumbs.vtt")
        }
        try folder.write(Array((manifest(set, sprite: spriteName, vtt: vttName).text + "\n").utf8), to: "manifest.json")
    }

    public static func manifest(_ set: ThumbnailSet, sprite: String?, vtt: String?) -> JSON {
        .object([
            ("url", .string(set.input)),
            ("thumbnails", .array(set.thumbnails.map { t in
                .object([("time", .double(PrefetchReport.ms(t.time))), ("pts", .double(PrefetchReport.ms(t.pts))),
                         ("file", .string(t.fileName)), ("width", .int(t.width)), ("height", .int(t.height))])
            })),
            ("sprite", .optional(sprite)), ("vtt", .optional(vtt)),
        ])
    }

    public static func json(_ set: ThumbnailSet, dir: String, sprite: Bool) -> JSON {
        guard case .object(var members) = manifest(set, sprite: sprite ? "sprite.jpg" : nil, vtt: sprite ? "thumbs.vtt" : nil)
        else { return .null }
        members.append(("dir", .string(dir)))
        members.append(("notes", .array(set.notes.map { .string($0) })))
        members.append(("fetch", .object([("requests", .int(set.fetch.requests)), ("bytes_fetched", .int(set.fetch.bytesFetched)),
                                          ("floor_bytes", .int(set.floorBytes))])))
        return .object(members)
    }
}
