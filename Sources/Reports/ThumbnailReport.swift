import Foundation
import MediaKit

/// A thumbnail set on disk (pictures, `manifest.json`, sprite and VTT) and as the object
/// `mprobe thumbs --json` and a thumbnail job's result show.
public enum ThumbnailReport {
    public static func write(_ set: ThumbnailSet, to dir: String, sprite: (Int, Int)??) throws {
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
