import ByteSources

/// The duration of a Matroska file that states none (written as a stream, as a browser's
/// MediaRecorder writes WebM: no Duration in its Info, no Cues), from its last Cluster: the
/// Cluster's Timecode plus the largest relative timecode of its blocks. libavformat, without Cues
/// or a Duration, would have to read every Cluster to know it; ffprobe reports none.
///
/// A bounded read of the tail, searched backwards for the last whole Cluster (`MatroskaClusters`):
/// 128 KiB first (a writer to a pipe closes a Cluster every 32 KiB or so), as much as a probe reads
/// of the head (`OpenedInput.probeHeadRead`); then 1, 4 and 16 MiB (a recorder closes one at each
/// key frame). The time lacks the last frame's own duration (a frame, 20–40 ms), which nothing in
/// the file states.
public enum MatroskaTail {
    static let scans: [Int64] = [128 << 10, 1 << 20, 4 << 20, 16 << 20]

    /// Seconds from `start` to the last block, with `tick` seconds per timecode unit; nil when no
    /// Cluster is found.
    public static func duration(source: any MediaSource, tick: Double, start: Double) throws -> Double? {
        guard tick > 0, let size = try source.size(), size > 0 else { return nil }
        var scanned: Int64 = 0
        for wanted in scans where wanted > scanned {
            scanned = min(size, wanted)
            try source.prefetch(size - scanned..<size)
            let bytes = try source.bytes(at: size - scanned, count: Int(scanned))
            if let last = lastBlockTimecode(in: bytes) {
                let seconds = Double(last) * tick - start
                return seconds > 0 && seconds.isFinite ? seconds : nil
            }
            if scanned == size { break }
        }
        return nil
    }

    /// The largest block timecode of the last whole Cluster in `bytes`.
    static func lastBlockTimecode(in bytes: [UInt8]) -> Int64? {
        MatroskaClusters.lastWholeCluster(in: bytes)?.blocks.map(\.timecode).max()
    }
}
