import ByteSources
import CFFmpeg

/// Reading every field `ffprobe -show_format -show_streams` reports into `ProbeDetails`, with the
/// same rules for what counts as unknown.
extension FormatContext {
    /// `input` as shown; `specifier` chooses streams as `-select_streams` does (FFmpeg's stream
    /// specifiers: `v`, `a:1`, `0`, `p:1`, `#0x100`...), nil for all of them.
    /// Opens a decoder per stream, as ffprobe does, for the fields only a decoder knows.
    package func details(input: String, selecting specifier: String?) throws -> ProbeDetails {
        let fc = pointer.pointee
        let selected = try (0..<streamCount).filter { try matches(stream: $0, specifier) }
        let programs = (0..<Int(fc.nb_programs)).compactMap { fc.programs[$0] }.map { p in
            let indexes = (0..<Int(p.pointee.nb_stream_indexes)).map { Int(p.pointee.stream_index[$0]) }
            return ProgramDetails(
                id: Int(p.pointee.id), number: Int(p.pointee.program_num),
                streamCount: Int(p.pointee.nb_stream_indexes), pmtPID: Int(p.pointee.pmt_pid),
                pcrPID: Int(p.pointee.pcr_pid), tags: FormatContext.tags(p.pointee.metadata),
                streamIndexes: indexes.filter(selected.contains))
        }
        let size = ff.avio_size(fc.pb)
        let format = FormatDetails(
            filename: input, streamCount: streamCount, programCount: Int(fc.nb_programs), name: formatName,
            longName: fc.iformat.pointee.long_name.map { String(cString: $0) },
            startTime: FormatContext.seconds(fc.start_time, AVRational(num: 1, den: AV_TIME_BASE)),
            duration: FormatContext.seconds(fc.duration, AVRational(num: 1, den: AV_TIME_BASE)),
            size: size >= 0 ? size : nil, bitRate: fc.bit_rate > 0 ? fc.bit_rate : nil,
            probeScore: Int(fc.probe_score), tags: FormatContext.tags(fc.metadata))
        return ProbeDetails(format: format, streams: try selected.map(streamDetails), programs: programs)
    }

    /// Whether stream `index` matches `specifier` (always, without one).
    /// The corresponding FFmpeg function is `avformat_match_stream_specifier`.
    private func matches(stream index: Int, _ specifier: String?) throws -> Bool {
        guard let specifier, let st = stream(index) else { return true }
        let rc = ff.avformat_match_stream_specifier(pointer, st, specifier)
        guard rc >= 0 else {
            throw InvalidOption("select_streams", "'\(specifier)' is not a stream specifier FFmpeg understands")
        }
        return rc > 0
    }

    private func streamDetails(_ index: Int) throws -> StreamDetails {
        guard let st = stream(index) else { throw MediaError.noTracks(detail: "no track #\(index)") }
        let s = st.pointee
        let par = s.codecpar.pointee
        let descriptor = ff.avcodec_descriptor_get(par.codec_id)?.pointee
        var tag = [CChar](repeating: 0, count: Int(AV_FOURCC_MAX_STRING_SIZE))
        _ = ff.av_fourcc_make_string(&tag, par.codec_tag)
        let showsIDs = pointer.pointee.iformat.pointee.flags & AVFMT_SHOW_IDS != 0
        var details = StreamDetails(
            index: Int(s.index),
            codecName: descriptor.map { String(cString: $0.name) },
            codecLongName: descriptor.map { $0.long_name.map { String(cString: $0) } ?? "unknown" },
            profile: ff.avcodec_profile_name(par.codec_id, par.profile).map { String(cString: $0) }
                ?? (par.profile != FF_PROFILE_UNKNOWN ? String(par.profile) : nil),
            codecType: ff.av_get_media_type_string(par.codec_type).map { String(cString: $0) },
            codecTagString: FormatContext.text(tag), codecTag: par.codec_tag,
            id: showsIDs ? s.id : nil,
            realFrameRate: Rational(s.r_frame_rate), averageFrameRate: Rational(s.avg_frame_rate),
            timeBase: Rational(s.time_base),
            startPTS: s.start_time == mp_av_nopts_value() ? nil : s.start_time,
            startTime: FormatContext.seconds(s.start_time, s.time_base),
            durationTS: s.duration == mp_av_nopts_value() ? nil : s.duration,
            duration: FormatContext.seconds(s.duration, s.time_base),
            bitRate: par.bit_rate > 0 ? par.bit_rate : nil,
            frameCount: s.nb_frames != 0 ? s.nb_frames : nil,
            extradataSize: par.extradata_size > 0 ? Int(par.extradata_size) : nil,
            disposition: Disposition(rawValue: s.disposition),
            tags: FormatContext.tags(s.metadata), sideData: sideData(st))
        switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO: details.video = video(st)
        case AVMEDIA_TYPE_AUDIO: details.audio = FormatContext.audio(par)
        case AVMEDIA_TYPE_SUBTITLE:
            details.subtitleWidth = par.width != 0 ? Int(par.width) : nil
            details.subtitleHeight = par.height != 0 ? Int(par.height) : nil
        default: break
        }
        details.decoder = try FrameDecoder.describing(self, stream: index)?.details
        return details
    }

    private func video(_ st: UnsafeMutablePointer<AVStream>) -> VideoDetails {
        let par = st.pointee.codecpar.pointee
        var details = VideoDetails(
            width: Int(par.width), height: Int(par.height), hasBFrames: Int(par.video_delay),
            pixelFormat: ff.av_get_pix_fmt_name(AVPixelFormat(rawValue: par.format)).map { String(cString: $0) },
            level: Int(par.level),
            colorRange: par.color_range == AVCOL_RANGE_UNSPECIFIED
                ? nil : ff.av_color_range_name(par.color_range).map { String(cString: $0) },
            colorSpace: par.color_space == AVCOL_SPC_UNSPECIFIED
                ? nil : ff.av_color_space_name(par.color_space).map { String(cString: $0) },
            colorTransfer: par.color_trc == AVCOL_TRC_UNSPECIFIED
                ? nil : ff.av_color_transfer_name(par.color_trc).map { String(cString: $0) },
            colorPrimaries: par.color_primaries == AVCOL_PRI_UNSPECIFIED
                ? nil
                : ff.av_color_primaries_name(par.color_primaries).map { String(cString: $0) },
            chromaLocation: par.chroma_location == AVCHROMA_LOC_UNSPECIFIED
                ? nil
                : ff.av_chroma_location_name(par.chroma_location).map { String(cString: $0) },
            fieldOrder: FormatContext.fieldOrderNames[par.field_order])
        // The stream's ratio, else the codec's; the display ratio reduced as ffprobe does it (the
        // products are C ints there, and wrap the same way here).
        let sar = ff.av_guess_sample_aspect_ratio(pointer, st, nil)
        if sar.num != 0 {
            var dar = AVRational()
            _ = ff.av_reduce(&dar.num, &dar.den, Int64(par.width &* sar.num), Int64(par.height &* sar.den), 1024 * 1024)
            details.sampleAspectRatio = Rational(sar)
            details.displayAspectRatio = Rational(dar)
        }
        return details
    }

    private static let fieldOrderNames: [AVFieldOrder: String] = [
        AV_FIELD_PROGRESSIVE: "progressive", AV_FIELD_TT: "tt", AV_FIELD_BB: "bb", AV_FIELD_TB: "tb", AV_FIELD_BT: "bt",
    ]

    private static func audio(_ par: AVCodecParameters) -> AudioDetails {
        var layout = par.ch_layout
        var text = [CChar](repeating: 0, count: 128)
        let described =
            par.ch_layout.order != AV_CHANNEL_ORDER_UNSPEC
            && ff.av_channel_layout_describe(&layout, &text, text.count) >= 0
        return AudioDetails(
            sampleFormat: ff.av_get_sample_fmt_name(AVSampleFormat(rawValue: par.format)).map { String(cString: $0) },
            sampleRate: Int(par.sample_rate), channels: Int(par.ch_layout.nb_channels),
            channelLayout: described ? FormatContext.text(text) : nil,
            bitsPerSample: Int(ff.av_get_bits_per_sample(par.codec_id)))
    }

    /// A timestamp in seconds, computed as ffprobe does (`ts * av_q2d(tb)`, so the last digit
    /// agrees); nil for `AV_NOPTS_VALUE`.
    static func seconds(_ ts: Int64, _ tb: AVRational) -> Double? {
        ts == mp_av_nopts_value() ? nil : Double(ts) * av_q2d(tb)
    }
}

extension Rational {
    init(_ r: AVRational) { self.init(r.num, r.den) }
}

extension FormatContext {
    /// A C string FFmpeg wrote into a buffer of ours, up to its terminating zero.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
