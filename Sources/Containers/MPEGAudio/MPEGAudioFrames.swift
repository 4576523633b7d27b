import ByteSources
import RangeFetch
import Support

/// The frames of an MPEG audio stream (an MP3), walked by their headers, each of which states the
/// frame's length and samples: where a window that the table of contents placed by proportion
/// really ends. A window ending where the estimate put it either missed the last frames (a player
/// reading them then started a readahead of up to 1 MiB) or took bytes no frame of it needed.
package enum MPEGAudioFrames {
    /// A window from the frame at or after `position`, which a player's seek gives the time
    /// `time`, to `end` (seconds, in the stream's own frame of reference).
    package struct Window: Sendable {
        let position: Int64
        let time: Double
        let end: Double

        package init(position: Int64, time: Double, end: Double) {
            (self.position, self.time, self.end) = (position, time, end)
        }
    }

    /// A name ending in `.mp3` most likely names an MP3, whose header is an ID3 tag and a frame: its
    /// first request is this small, not the 64 KiB most MP4 headers need (the first request of
    /// a 10 s window of a 32 kb/s file would otherwise be larger than the window).
    package static let firstRequest: Int64 = 8 << 10

    /// Where the head libavformat reads to open an MP3 ends: its ID3v2 tag, which it reads whole
    /// (the tags and the cover art a probe reports), the Xing frame and the frames its analysis
    /// reads (`headFrames`; see `FormatContext`'s `max_ts_probe`). A tag longer than the first
    /// request holds cover art, most likely, whose analysis reads on (56 KB of a 32 kb/s file's
    /// frames): 64 KiB of frames after it, what the first request of any other file takes. Nil
    /// for a source that does not start like an MP3.
    package static func headEnd(_ source: any MediaSource) -> Int64? {
        guard source.isLocal(0..<10), let b = try? source.bytes(at: 0, count: 10), b.count == 10 else { return nil }
        if b.starts(with: Array("ID3".utf8)), b[6...9].allSatisfy({ $0 < 0x80 }) {
            let size = Int64(BigEndian.uint(b[6...9], bitsPerByte: 7))  // four 7-bit bytes
            let tag = 10 + size + (b[5] & 0x10 != 0 ? 10 : 0)  // a footer repeats the header
            return tag + (tag > firstRequest ? 64 << 10 : headFrames)
        }
        return frame(Array(b[0..<4])) != nil ? headFrames : nil
    }

    /// The frames after a short tag (or none) that libavformat's head reads take.
    static let headFrames: Int64 = 16 << 10

    /// What libavformat asks of each read of an MP3: its frames are small, and a demuxer asking
    /// 32 KiB at a time read 40 KiB of a 140 kb/s file's head where it needed 8.
    package static let readSize: Int32 = 4 << 10

    /// libavformat's MP3 demuxer reads 1,024 bytes at a time, and its parser hands out a frame
    /// once the next has begun: a player online reads this far past the last frame it needs
    /// (offline, a failed read there ends the window all the same).
    static let readPast: Int64 = 2 << 10

    /// libavformat's seek to a table-of-contents point reads the 4 KiB before it, searching for
    /// the frame to start from, and some after it: three frames from each place it tries, in
    /// reads of `readSize`. A window planned shorter than that had the seek's first read past it
    /// start a readahead of 512 KiB.
    package static let seekSearch: Int64 = 4 << 10
    package static let seekReads: Int64 = 16 << 10

    /// The length in bytes and the duration in seconds of the frame whose header is `h`; nil when
    /// these are not the header of a frame of a known length (free format has none).
    static func frame(_ h: [UInt8]) -> (length: Int64, seconds: Double)? {
        guard h.count >= 4, h[0] == 0xFF, h[1] & 0xE0 == 0xE0 else { return nil }
        let version = Int(h[1] >> 3 & 3)  // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
        let layer = Int(h[1] >> 1 & 3)  // 1: III, 2: II, 3: I
        let bitrateIndex = Int(h[2] >> 4), rateIndex = Int(h[2] >> 2 & 3), padding = Int(h[2] >> 1 & 1)
        guard version != 1, layer != 0, (1...14).contains(bitrateIndex), rateIndex != 3 else { return nil }
        let mpeg1 = version == 3
        let kbps: [Int]
        switch (mpeg1, layer) {
        case (true, 3): kbps = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): kbps = [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): kbps = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 3): kbps = [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): kbps = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        let rate = [44_100, 48_000, 32_000][rateIndex] >> (mpeg1 ? 0 : version == 2 ? 1 : 2)
        let bitrate = kbps[bitrateIndex - 1] * 1000
        let (length, samples): (Int, Int)
        switch layer {
        case 3: (length, samples) = ((12 * bitrate / rate + padding) * 4, 384)
        case 2: (length, samples) = (144 * bitrate / rate + padding, 1152)
        default: (length, samples) = ((mpeg1 ? 144 : 72) * bitrate / rate + padding, mpeg1 ? 1152 : 576)
        }
        return (Int64(length), Double(samples) / Double(rate))
    }

    /// Fetches what `window` lacks from its first frame to the end of the first frame that starts
    /// at or past its end (one frame more for a time base's rounding) and `readPast` after it,
    /// reading ahead by the bytes per second walked so far. Stops, leaving the rest to the
    /// player's reading, where the frames cannot be followed.
    package static func fetchThrough(_ window: Window, source: any MediaSource, cancellation: Cancellation) throws {
        guard let size = try source.size(), window.position < size else { return }
        let walk = Walk(source: source, size: size, window: window)
        guard var at = try walk.sync(from: window.position) else { return }
        var time = window.time
        var previous = at
        while at < size {
            if cancellation.isCancelled { throw MediaError.interrupted }
            guard let frame = try walk.frame(at: at, after: previous, time: time) else { return }
            if time >= window.end {
                return try walk.have(previous..<min(size, at + frame.length + readPast), time: time)
            }
            previous = at
            at += frame.length
            time += frame.seconds
        }
    }

    /// The reading of a walk: bytes made local as it goes, a fetch ahead sized by what it walked.
    private struct Walk {
        let source: any MediaSource
        let size: Int64
        let window: Window

        /// The first offset from `from`, within 4 KiB, where two frames follow each other.
        func sync(from: Int64) throws -> Int64? {
            let end = min(size, from + (4 << 10))
            try have(from..<end, time: window.time)
            let bytes = try source.bytes(at: from, count: Int(end - from))
            for i in bytes.indices where i + 4 <= bytes.count {
                guard let first = MPEGAudioFrames.frame(Array(bytes[i..<i + 4])) else { continue }
                let next = i + Int(first.length)
                if next + 4 > bytes.count || MPEGAudioFrames.frame(Array(bytes[next..<next + 4])) != nil {
                    return from + Int64(i)
                }
            }
            return nil
        }

        /// The frame at `offset`, the one before it (from `previous`) fetched whole too.
        func frame(at offset: Int64, after previous: Int64, time: Double) throws -> (length: Int64, seconds: Double)? {
            try have(previous..<min(size, offset + 4), time: time)
            return MPEGAudioFrames.frame(try source.bytes(at: offset, count: Int(min(4, size - offset))))
        }

        /// Fetches `range` unless it is here, with what the rest of the window should take at the
        /// rate walked from its start, what a player reads past it, and 1 KiB (a frame or two).
        func have(_ range: Range<Int64>, time: Double) throws {
            guard !source.isLocal(range) else { return }
            let walked = time - window.time
            let rate = walked > 0 ? Double(range.lowerBound - window.position) / walked : 0
            let ahead = Int64(max(0, window.end - time) * rate * 1.02) + readPast + (1 << 10)
            try source.prefetch(range.lowerBound..<min(size, max(range.upperBound, range.lowerBound + ahead)))
        }
    }
}
