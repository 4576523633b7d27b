/// One sample as an index knows it: the demuxer's (`FormatContext.indexEntries`), or one a
/// container's parser found (a fragment's key frame, a Matroska Cue point's block).
public struct IndexEntry: Sendable, Equatable {
    /// Byte offset and size in the file.
    public let position: Int64
    public let size: Int64
    /// Presentation time in seconds, as a seek or a player sees it: the index holds DTS, which
    /// with B-frames or an edit list runs ahead of the PTS by the stream's decode delay; that delay
    /// (the stream's start time minus its first DTS) is added back.
    public let time: Double
    /// `time` in the stream's time base: what `av_seek_frame` expects to land on this sample.
    public let timestamp: Int64
    /// Decode time in seconds, as the index holds it.
    public let decodeTime: Double
    public let isKeyframe: Bool
    public var byteRange: Range<Int64> { position..<position + size }

    public init(position: Int64, size: Int64, time: Double, timestamp: Int64, decodeTime: Double, isKeyframe: Bool) {
        (self.position, self.size, self.time, self.timestamp) = (position, size, time, timestamp)
        (self.decodeTime, self.isKeyframe) = (decodeTime, isKeyframe)
    }
}
