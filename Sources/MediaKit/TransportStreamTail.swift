import CFFmpeg
import MediaSource

/// The durations of an MPEG-TS from the timestamps of its tail, as libavformat estimates them
/// (each audio and video stream ends at its latest PES timestamp plus one frame, the file where
/// its last stream ends), from a read sized for a probe: libavformat reads the last 250,000 bytes
/// whatever the bit rate; this reads as much as a probe reads of the head (`OpenedInput.probeHeadRead`),
/// 128 KiB, and grows the read to 16 MiB while a stream has no timestamp in it, as libavformat's does.
enum TransportStreamTail {
    static let scans: [Int64] = [128 << 10, 1 << 20, 4 << 20, 16 << 20]

    /// A stream to find the end of, in its time base of 90 kHz ticks.
    private struct Stream {
        let index: Int
        let pid: Int
        let start: Int64
        /// One frame (a video frame at the stream's frame rate, an audio frame's samples), the
        /// duration libavformat gives the last packet.
        let frame: Int64
    }

    /// Sets the durations of `context`, an MPEG-TS whose analysis left them to this
    /// (`FormatContext.durationsLeftToTheTail`), as libavformat would have. False when its streams
    /// are not what this follows or no timestamp was found: the caller analyses it as ffprobe does.
    static func apply(to context: FormatContext, source: any MediaSource) throws -> Bool {
        guard let size = try source.size(), size > 0 else { return false }
        var streams: [Stream] = []
        for index in 0..<context.streamCount {
            guard let st = context.stream(index)?.pointee, st.start_time != mp_av_nopts_value() else { continue }
            let par = st.codecpar.pointee
            // Subtitles and data with times count in libavformat's end too: not followed here.
            let video = par.codec_type == AVMEDIA_TYPE_VIDEO
            guard video || par.codec_type == AVMEDIA_TYPE_AUDIO, st.time_base.num == 1, st.time_base.den == 90_000 else { return false }
            // An audio frame's samples as libavformat counts them for a packet of some bytes: the
            // decoder's frame size, or the codec's fixed one (AC-3's 1536).
            let (num, den) = video ? (Int64(st.r_frame_rate.den), Int64(st.r_frame_rate.num))
                                   : (Int64(ff.av_get_audio_frame_duration2(st.codecpar, 1)), Int64(par.sample_rate))
            streams.append(Stream(index: index, pid: Int(st.id), start: st.start_time,
                                  frame: num > 0 && den > 0 ? num * 90_000 / den : 0))
        }
        guard !streams.isEmpty else { return false }
        var latest: [Int: Int64] = [:]
        var scanned: Int64 = 0
        for wanted in scans where wanted > scanned {
            scanned = min(size, wanted)
            try source.prefetch(size - scanned..<size)
            latest = latestTimestamps(in: try source.bytes(at: size - scanned, count: Int(scanned)),
                                      starts: Dictionary(streams.map { ($0.pid, $0.start) }) { first, _ in first })
            if streams.allSatisfy({ latest[$0.pid] != nil }) || scanned == size { break }
        }
        var ends: [Int64] = []
        for stream in streams {
            guard let pts = latest[stream.pid] else { continue }
            let duration = pts + stream.frame - stream.start
            guard duration > 0 else { continue }
            context.stream(stream.index)?.pointee.duration = duration
            ends.append(pts + stream.frame)
        }
        guard let end = ends.max(), let start = streams.map(\.start).min() else { return false }
        context.setDuration(seconds: Double(end - start) / 90_000, bytes: size)
        return true
    }

    /// The last PTS of each stream in `bytes` (PID → its start), as libavformat keeps it: the
    /// largest, but for one that jumps more than a minute from the packet before it. The TS
    /// packets are 188 bytes, 192 with a timecode before each, or 204 with parity after.
    static func latestTimestamps(in bytes: [UInt8], starts: [Int: Int64]) -> [Int: Int64] {
        var latest: [Int: Int64] = [:]
        var previous: [Int: Int64] = [:]
        var at = 0
        while let (start, stride) = sync(bytes, from: at) {
            at = start
            while at + 188 <= bytes.count, bytes[at] == 0x47 {
                if let (pid, read) = timestamp(ofPacketAt: at, in: bytes), let first = starts[pid] {
                    let pts = read < first - (1 << 32) ? read + (1 << 33) : read // the 33-bit clock wrapped since the start
                    if let known = latest[pid], let before = previous[pid] {
                        if pts > known && abs(pts - before) < 60 * 90_000 { latest[pid] = pts }
                    } else {
                        latest[pid] = pts
                    }
                    previous[pid] = pts
                }
                at += stride
            }
            at += 1 // lost sync (damage, a cut): find it again
        }
        return latest
    }

    /// The next offset from `from` where eight packets in a row start with the sync byte, and
    /// their length.
    private static func sync(_ bytes: [UInt8], from: Int) -> (Int, Int)? {
        var at = from
        while at + 188 <= bytes.count {
            for stride in [188, 192, 204] where at + 7 * stride < bytes.count {
                if (0..<8).allSatisfy({ bytes[at + $0 * stride] == 0x47 }) { return (at, stride) }
            }
            at += 1
        }
        return nil
    }

    /// The PID and PTS of the packet at `at` when it starts a PES whose header has a PTS.
    private static func timestamp(ofPacketAt at: Int, in bytes: [UInt8]) -> (Int, Int64)? {
        let flags = bytes[at + 1]
        guard flags & 0x40 != 0 else { return nil } // payload_unit_start_indicator
        let pid = Int(flags & 0x1F) << 8 | Int(bytes[at + 2])
        let control = bytes[at + 3] >> 4 & 3
        guard control & 1 != 0 else { return nil } // no payload
        let p = at + 4 + (control & 2 != 0 ? 1 + Int(bytes[at + 4]) : 0)
        guard p + 14 <= at + 188, bytes[p] == 0, bytes[p + 1] == 0, bytes[p + 2] == 1,
              bytes[p + 6] & 0xC0 == 0x80, bytes[p + 7] & 0x80 != 0 else { return nil } // PES with a PTS
        let t = bytes[p + 9..<p + 14].map(Int64.init)
        let pts = (t[0] >> 1 & 7) << 30 | t[1] << 22 | (t[2] >> 1) << 15 | t[3] << 7 | t[4] >> 1
        return (pid, pts)
    }
}
