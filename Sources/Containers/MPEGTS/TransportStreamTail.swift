import ByteSources

/// The durations of an MPEG-TS from the timestamps of its tail, as libavformat estimates them,
/// from a read sized for a probe: libavformat reads the last 250,000 bytes whatever the bit rate
/// (and 500,000 once more while an audio or video stream has no timestamp there); this reads as
/// much as a probe reads of the head (`OpenedInput.probeHeadRead`), 128 KiB, then 500,000 bytes.
/// A window of another size can see other first timestamps: a file whose last 200 KB restart
/// their clock (two recordings joined) has libavformat's duration or this one's, each by its window.
/// The demuxer's side (reading its streams, setting what this finds) is `TransportStreamDemuxing` in MediaKit.
public enum TransportStreamTail {
    static let scans: [Int64] = [128 << 10, 500_000]

    /// A stream to find the end of, in its time base of 90 kHz ticks.
    public struct Stream: Sendable {
        /// The demuxer's number for it.
        public let index: Int
        public let pid: Int
        public let start: Int64
        /// One frame (a video frame at the stream's frame rate, an audio frame's samples), the
        /// duration libavformat gives the last packet; none for subtitles and data.
        public let frame: Int64
        /// Audio or video: libavformat reads on while one has no duration; the file's start and
        /// end are theirs, a subtitle's or data's only within a second of them.
        public let primary: Bool

        public init(index: Int, pid: Int, start: Int64, frame: Int64, primary: Bool) {
            (self.index, self.pid, self.start, self.frame, self.primary) = (index, pid, start, frame, primary)
        }
    }

    /// What the tail gives: each stream's duration in ticks, by `Stream.index`, and the file's.
    public struct Durations: Sendable, Equatable {
        public let streams: [Int: Int64]
        public let seconds: Double
    }

    /// The durations of `streams` from the tail of `source`, as libavformat would have set them;
    /// nil when no timestamp was found (the caller analyses the file as ffprobe does).
    public static func durations(of streams: [Stream], source: any MediaSource) throws -> Durations? {
        guard !streams.isEmpty, let size = try source.size(), size > 0 else { return nil }
        var durations: [Int: Int64] = [:]
        var scanned: Int64 = 0
        for wanted in scans where wanted > scanned {
            scanned = min(size, wanted)
            try source.prefetch(size - scanned..<size)
            durations = self.durations(of: streams, in: try source.bytes(at: size - scanned, count: Int(scanned)))
            if streams.allSatisfy({ !$0.primary || durations[$0.pid] != nil }) || scanned == size { break }
        }
        var (start, end, textStart, textEnd) = (Int64.max, Int64.min, Int64.max, Int64.min)
        var found: [Int: Int64] = [:]
        for stream in streams {
            if stream.primary { start = min(start, stream.start) } else { textStart = min(textStart, stream.start) }
            guard let duration = durations[stream.pid] else { continue }
            found[stream.index] = duration
            if stream.primary {
                end = max(end, stream.start + duration)
            } else {
                textEnd = max(textEnd, stream.start + duration)
            }
        }
        // A subtitle's or data's times stretch the file by less than a second, as libavformat takes them.
        if start == .max || (start > textStart && start - textStart < 90_000) { start = textStart }
        if end == .min || (end < textEnd && textEnd - end < 90_000) { end = textEnd }
        guard start != .max, end != .min, end > start else { return nil }
        return Durations(streams: found, seconds: Double(end - start) / 90_000)
    }

    /// Each stream's duration from the PES timestamps in `bytes`, by PID, as libavformat keeps it:
    /// from its start to a timestamp and a frame, the first one that is past the start, then
    /// larger ones that are less than a minute from the one before. A timestamp within 2^32 of
    /// the start either way is the clock's, wrapped or not. The TS packets are 188 bytes, 192 with
    /// a timecode before each, or 204 with parity after.
    private static func durations(of streams: [Stream], in bytes: [UInt8]) -> [Int: Int64] {
        let byPID = Dictionary(streams.map { ($0.pid, $0) }) { first, _ in first }
        var durations: [Int: Int64] = [:]
        var last: [Int: Int64] = [:]
        var at = 0
        while let (start, stride) = sync(bytes, from: at) {
            at = start
            while at + 188 <= bytes.count, bytes[at] == 0x47 {
                if let (pid, read) = timestamp(ofPacketAt: at, in: bytes), let stream = byPID[pid] {
                    var delta = (read - stream.start) & ((1 << 33) - 1)
                    if delta >= 1 << 32 { delta -= 1 << 33 }
                    let duration = delta + stream.frame
                    if duration > 0 {
                        if let known = durations[pid], let before = last[pid], before > 0,
                            !(known < duration && abs(duration - before) < 60 * 90_000)
                        {
                            // kept: an outlier, or not past what is known
                        } else {
                            durations[pid] = duration
                        }
                        last[pid] = duration
                    }
                }
                at += stride
            }
            at += 1  // lost sync (damage, a cut): find it again
        }
        return durations
    }

    /// The next offset from `from` where packets start with the sync byte eight times in a row,
    /// or as many times as the bytes left hold (a resync near the end), and their length.
    private static func sync(_ bytes: [UInt8], from: Int) -> (Int, Int)? {
        var at = from
        while at + 188 <= bytes.count {
            if bytes[at] == 0x47 {
                for stride in [188, 192, 204] {
                    let count = min(8, (bytes.count - at - 188) / stride + 1)
                    if (1..<count).allSatisfy({ bytes[at + $0 * stride] == 0x47 }) && (count > 1 || stride == 188) {
                        return (at, stride)
                    }
                }
            }
            at += 1
        }
        return nil
    }

    /// The PID and PTS of the packet at `at` when it starts a PES whose header has a PTS.
    private static func timestamp(ofPacketAt at: Int, in bytes: [UInt8]) -> (Int, Int64)? {
        let flags = bytes[at + 1]
        guard flags & 0x40 != 0 else { return nil }  // payload_unit_start_indicator
        let pid = Int(flags & 0x1F) << 8 | Int(bytes[at + 2])
        let control = bytes[at + 3] >> 4 & 3
        guard control & 1 != 0 else { return nil }  // no payload
        let p = at + 4 + (control & 2 != 0 ? 1 + Int(bytes[at + 4]) : 0)
        // Streams without the header that holds a PTS: program stream map, padding, private
        // stream 2, ECM, EMM, directory, DSM-CC, H.222.1 type E.
        guard p + 14 <= at + 188, bytes[p] == 0, bytes[p + 1] == 0, bytes[p + 2] == 1,
            ![0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF].contains(bytes[p + 3]),
            bytes[p + 6] & 0xC0 == 0x80, bytes[p + 7] & 0x80 != 0
        else { return nil }  // PES with a PTS
        let t = bytes[p + 9..<p + 14].map(Int64.init)
        let pts = (t[0] >> 1 & 7) << 30 | t[1] << 22 | (t[2] >> 1) << 15 | t[3] << 7 | t[4] >> 1
        return (pid, pts)
    }
}
