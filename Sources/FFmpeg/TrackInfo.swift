/// One stream as libavformat describes it, in the names ffprobe uses.
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
