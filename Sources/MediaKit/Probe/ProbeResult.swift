import ByteSources
import Containers
import FFmpeg

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
