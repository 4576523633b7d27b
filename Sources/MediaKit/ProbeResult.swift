import MediaSource

/// What `mprobe URL` reports: the container, every track, and the MP4 layout.
public struct ProbeResult: Sendable {
    public var input: String
    public var size: Int64?
    /// libavformat's short name, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var format: String
    public var formatLongName: String?
    /// Seconds.
    public var duration: Double?
    public var bitRate: Int64?
    public var startTime: Double?
    /// The MP4/MOV layout, nil for other containers.
    public var layout: MP4Layout?
    public var tracks: [TrackInfo]
    public var tags: [(String, String)]
    /// Things the user should hear once (a server that ignores ranges, a damaged box layout).
    public var warnings: [String]
    /// What answering cost.
    public var fetch: SourceCounters
    /// The bytes libavformat read to answer: the least any reader of this input has to move.
    public var floorBytes: Int64 = 0
    public var seconds: Double
}

public struct TrackInfo: Sendable {
    public enum Kind: String, Sendable { case video, audio, subtitle, data, attachment, unknown }

    public var index: Int
    public var kind: Kind
    public var codec: String
    public var codecLongName: String?
    public var profile: String?
    public var width: Int?
    public var height: Int?
    /// Average frame rate in frames per second.
    public var frameRate: Double?
    public var pixelFormat: String?
    public var sampleRate: Int?
    public var channels: Int?
    public var channelLayout: String?
    public var language: String?
    public var bitRate: Int64?
    /// Seconds.
    public var duration: Double?
    public var frames: Int64?
    /// Degrees of the display matrix rotation (as ffprobe's side data shows it), if any.
    public var rotation: Double?
    public var isDefault: Bool
    public var tags: [(String, String)]
}
