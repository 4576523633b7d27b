/// What went wrong with the media itself, in words a person can act on.
public enum MediaError: Error, CustomStringConvertible, Equatable {
    /// libavformat found no container it can read.
    case notMedia(input: String)
    /// The input has no bytes at all.
    case empty(input: String)
    /// An HLS playlist or a DASH manifest given to a command that does not read streams (`--of
    /// ffprobe`): libavformat would fetch the segments itself, around the cache.
    case streamingManifest(input: String, kind: String)
    /// An HLS playlist that is not one, or whose tags make no sense.
    case malformedPlaylist(input: String, detail: String)
    /// A streaming job this kind of stream cannot do (a live playlist has no window to keep).
    case unsupportedStream(input: String, detail: String)
    /// The container was recognised but its data is damaged or cut short.
    case malformed(input: String, detail: String)
    /// An MP4/MOV without a `moov` box: nothing can be played.
    case noMoov(input: String, detail: String)
    /// The selected tracks do not exist.
    case noTracks(detail: String)
    /// The job needs to place times in the file, and the file gives nothing to place them by: no
    /// index, no duration, no bit rate (a recording written as a stream, such as a browser's WebM).
    case noTimeline(input: String, detail: String)
    /// The job was cancelled.
    case interrupted

    public var description: String {
        switch self {
        case .notMedia(let input): return "\(input): not a media file libavformat can read"
        case .empty(let input): return "\(input): empty (0 bytes), not media"
        case .streamingManifest(let input, let kind):
            return
                "\(input): \(kind); this command does not read HLS or DASH (probe, prefetch, check and thumbs do): give the URL "
                + "of a segment or of a variant's media file"
        case .malformedPlaylist(let input, let detail): return "\(input): not a usable playlist or manifest: \(detail)"
        case .unsupportedStream(let input, let detail): return "\(input): \(detail)"
        case .malformed(let input, let detail): return "\(input): malformed or truncated media (\(detail))"
        case .noMoov(let input, let detail): return "\(input): not playable MP4: no moov box found (\(detail))"
        case .noTracks(let detail): return "no such tracks: \(detail)"
        case .noTimeline(let input, let detail): return "\(input): \(detail)"
        case .interrupted: return "interrupted: the job was cancelled"
        }
    }
}
