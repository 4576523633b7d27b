import MediaKit

/// A thumbnail set on disk (pictures, sprite sheets, `thumbs.vtt`, `manifest.json`) and as the
/// object `mprobe thumbs --json` and a thumbnail job's result show.
public enum ThumbnailReport {
    static let storyboardName = "thumbs.vtt"
    static let hlsName = "thumbs.m3u8"
    /// A master playlist offering the image playlist: its line goes into the stream's own master.
    static let hlsMasterName = "thumbs-master.m3u8"
    static let dashName = "thumbs-adaptationset.xml"

    public static func write(_ set: ThumbnailSet, to dir: String) throws {
        let folder = OutputFolder(dir)
        try folder.create()
        for t in set.thumbnails { try folder.write(t.encoded, to: t.fileName) }
        for sheet in set.sprites { try folder.write(sheet.encoded, to: sheet.fileName) }
        if let vtt = set.storyboard { try folder.write(Array(vtt.utf8), to: storyboardName) }
        if set.storyboards.contains(.hls), let playlist = Storyboard.hls(set),
            let master = Storyboard.hlsMaster(set, playlist: hlsName)
        {
            try folder.write(Array(playlist.utf8), to: hlsName)
            try folder.write(Array(master.utf8), to: hlsMasterName)
        }
        if set.storyboards.contains(.dash), let adaptationSet = Storyboard.dash(set), let first = set.sprites.first {
            // The template numbers every sheet from 1; the first is sprite.jpg elsewhere.
            try folder.write(first.encoded, to: "sprite-1.jpg")
            try folder.write(Array(adaptationSet.utf8), to: dashName)
        }
        try folder.write(Array((manifest(set).text + "\n").utf8), to: "manifest.json")
    }

    /// `sprite` is the first sheet (null without sheets), `sprites` every sheet in order.
    public static func manifest(_ set: ThumbnailSet) -> JSON {
        .object([
            ("url", .string(set.input)),
            (
                "thumbnails",
                .array(
                    set.thumbnails.map { t in
                        .object([
                            ("time", .double(PrefetchReport.ms(t.time))), ("pts", .double(PrefetchReport.ms(t.pts))),
                            ("file", .string(t.fileName)), ("width", .int(t.width)), ("height", .int(t.height)),
                            ("skipped_blank_pts", t.skippedBlank.map { .double(PrefetchReport.ms($0)) } ?? .null),
                        ])
                    })
            ),
            ("sprite", .optional(set.sprites.first?.fileName)),
            ("sprites", .array(set.sprites.map { .string($0.fileName) })),
            ("vtt", .optional(set.storyboard == nil ? nil : storyboardName)),
            ("hls", .optional(set.storyboards.contains(.hls) && !set.sprites.isEmpty ? hlsName : nil)),
            ("hls_master", .optional(set.storyboards.contains(.hls) && !set.sprites.isEmpty ? hlsMasterName : nil)),
            ("dash", .optional(set.storyboards.contains(.dash) && !set.sprites.isEmpty ? dashName : nil)),
        ])
    }

    public static func json(_ set: ThumbnailSet, dir: String) -> JSON {
        guard case .object(var members) = manifest(set) else { return .null }
        members.append(("dir", .string(dir)))
        members.append(("notes", .array(set.notes.map { .string($0) })))
        members.append(
            (
                "fetch",
                .object([
                    ("requests", .int(set.fetch.requests)), ("bytes_fetched", .int(set.fetch.bytesFetched)),
                    ("floor_bytes", .int(set.floorBytes)),
                ])
            ))
        return .object(members)
    }
}
