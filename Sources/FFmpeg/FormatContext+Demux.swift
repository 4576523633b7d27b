import CFFmpeg

/// Demuxing: packets, seeks and the per-stream facts jobs need, so that the jobs (`Checker`,
/// `Thumbnailer`) never touch the `AVFormatContext` or its streams themselves.
extension FormatContext {
    /// Reads the next packet of any stream not discarded into `packet`; false at the end of the file.
    /// A failed read throws what the read path said (HTTP, offline miss, cancellation), else FFmpeg's error.
    /// The corresponding FFmpeg function is `av_read_frame`.
    package func readPacket(into packet: Packet) throws -> Bool {
        packet.unref()
        let rc = ff.av_read_frame(pointer, packet.pointer)
        if rc >= 0 { return true }
        if rc == mp_averror_eof() && readError == nil && !interrupted { return false }
        throw failure(rc, "av_read_frame")
    }

    /// Seeks stream `index` to the key frame at or before `timestamp` (in the stream's time base).
    /// The corresponding FFmpeg function is `av_seek_frame`.
    package func seek(stream index: Int, timestamp: Int64) throws {
        let rc = ff.av_seek_frame(pointer, Int32(clamping: index), timestamp, AVSEEK_FLAG_BACKWARD)
        if rc < 0 { throw failure(rc, "av_seek_frame") }
    }

    /// Seeks every stream to the key frame at or before `seconds` (absolute, as the container counts).
    /// The corresponding FFmpeg function is `avformat_seek_file`.
    package func seek(seconds: Double) throws {
        let target =
            Int64(exactly: (seconds * Double(AV_TIME_BASE)).rounded(.towardZero))
            ?? (seconds < 0 ? Int64.min : Int64.max)
        let rc = ff.avformat_seek_file(pointer, -1, Int64.min, target, target, 0)
        if rc < 0 { throw failure(rc, "avformat_seek_file") }
    }

    /// A timestamp of stream `index` in seconds.
    package func seconds(_ timestamp: Int64, stream index: Int) -> Double {
        guard let tb = stream(index)?.pointee.time_base, tb.den > 0 else { return 0 }
        return Double(timestamp) * Double(tb.num) / Double(tb.den)
    }

    /// `seconds` in stream `index`'s time base, rounded down (saturating for absurd values).
    package func timestamp(_ seconds: Double, stream index: Int) -> Int64 {
        guard let tb = stream(index)?.pointee.time_base, tb.num > 0 else { return 0 }
        return Int64(exactly: (seconds * Double(tb.den) / Double(tb.num)).rounded(.down))
            ?? (seconds < 0 ? Int64.min : Int64.max)
    }

    /// The stream's own duration in seconds, when it states one.
    package func duration(stream index: Int) -> Double? {
        guard let d = stream(index)?.pointee.duration, d != mp_av_nopts_value(), d > 0 else { return nil }
        return seconds(d, stream: index)
    }

    /// The sample aspect ratio the container states for stream `index`, if any.
    package func sampleAspectRatio(stream index: Int) -> Double? {
        stream(index).flatMap { Frame.ratio($0.pointee.sample_aspect_ratio) }
    }

    /// Degrees of the display matrix's rotation (counter-clockwise, as FFmpeg gives it), if any.
    package func rotation(stream index: Int) -> Double? {
        guard let st = stream(index) else { return nil }
        let rotation = mp_stream_rotation(st)
        return rotation.isNaN ? nil : rotation
    }

    /// Tells the demuxer to skip the other streams' packets, so their bytes are never read.
    package func discardAllStreams(except keep: Int) {
        for i in 0..<streamCount where i != keep { stream(i)?.pointee.discard = AVDISCARD_ALL }
    }
}
