import MediaKit

/// A thumbnail set on disk (pictures, sprite sheets, `thumbs.vtt`, `manifest.json`) and as the
/// object `mprobe thumbs --json` and a thumbnail job's result show.
public enum ThumbnailReport {
    static let storyboardName = "thumbs.vtt"

    public static func write(_ set: ThumbnailSet, to dir: String) throws {
        let folder = OutputFolder(dir)
        try folder.create()
        for t in set.thumbnails { try folder.write(t.encoded, to: t.fileName) }
        for sheet in set.sprites { try folder.write(sheet.encoded, to: sheet.fileName) }
        if let vtt = set.storyboard { try folder.write(Array(vtt.utf8), to: storyboardName) }
        try folder.write(Array((manifest(set).text + "\n").utf8), to: "manifest.json")
    }

    /// `sprite` is the first sheet (null without sheets), `sprites` every sheet in order.
    public static func manifest(_ set: ThumbnailSet) -> JSON {
        .object([
            ("url", .string(set.input)),
            ("thumbnails", .array(set.thumbnails.map { t in
                .object([("time", .double(PrefetchReport.ms(t.time))), ("pts", .double(PrefetchReport.ms(t.pts))),
                         ("file", .string(t.fileName)), ("width", .int(t.width)), ("height", .int(t.height))])
            })),
            ("sprite", .optional(set.sprites.first?.fileName)),
            ("sprites", .array(set.sprites.map { .string($0.fileName) })),
            ("vtt", .optional(set.storyboard == nil ? nil : storyboardName)),
        ])
    }

    public static func json(_ set: ThumbnailSet, dir: String) -> JSON {
        guard case .object(var members) = manifest(set) else { return .null }
        members.append(("dir", .string(dir)))
        members.append(("notes", .array(set.notes.map { .string($0) })))
        members.append(("fetch", .object([("requests", .int(set.fetch.requests)), ("bytes_fetched", .int(set.fetch.bytesFetched)),
                                          ("floor_bytes", .int(set.floorBytes))])))
        return .object(members)
    }
}
