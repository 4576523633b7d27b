/// A stream's clock as the demuxer counts it: seconds to timestamps in the stream's time base, and
/// back. Parsers that place what they find by the demuxer's times take it as a value.
public struct StreamClock {
    /// Seconds as a timestamp, rounded down.
    public let timestamp: (Double) -> Int64
    public let seconds: (Int64) -> Double

    public init(timestamp: @escaping (Double) -> Int64, seconds: @escaping (Int64) -> Double) {
        self.timestamp = timestamp
        self.seconds = seconds
    }
}

/// A key frame a parser found that the demuxer's index lacks: the position a seek to `timestamp`
/// is to land on (a Matroska Cluster), for the demuxer to learn.
public struct FoundKeyFrame: Sendable, Equatable {
    public let position: Int64
    public let timestamp: Int64
}
