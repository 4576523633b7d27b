import FFmpeg
import Foundation
import MediaKit

/// What `ffprobe -v error -of json -show_format -show_streams` (FFmpeg 5.1) prints, from
/// `ProbeDetails`: the same sections, keys, key order and value types — numbers where ffprobe writes
/// numbers, strings where it writes strings (`"duration": "4.000000"`, `"bit_rate": "242126"`,
/// `"time_base": "1/12800"`) — and keys ffprobe leaves out (unknown values) left out.
/// `mprobe probe --of ffprobe`, `mprobe ffprobe` and `GET /v1/probe?of=ffprobe` print it.
public enum FFprobeReport {
    /// The report as ffprobe lays it out: four spaces a level, one key a line.
    public static func text(_ details: ProbeDetails, showing entries: FFprobeEntries = .formatAndStreams) -> String {
        json(details, showing: entries).text(indentedBy: 4)
    }

    /// What ffprobe prints on stdout when it cannot read the input: the empty top-level object.
    public static let failureText = JSON.object([]).text(indentedBy: 4)

    public static func json(_ details: ProbeDetails, showing entries: FFprobeEntries = .formatAndStreams) -> JSON {
        let streams = Dictionary(details.streams.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        var root: [(String, JSON)] = []
        if entries.isShown(.programs) {
            root.append(("programs", .array(details.programs.map { program($0, streams: streams, entries) })))
        }
        if entries.isShown(.streams) {
            root.append(("streams", .array(details.streams.map { stream($0, in: .stream, entries) })))
        }
        if entries.isShown(.format) {
            root.append(("format", format(details.format, entries)))
        }
        return .object(root)
    }

    private static func format(_ f: FormatDetails, _ entries: FFprobeEntries) -> JSON {
        var fields = Fields(section: .format, entries: entries)
        fields.add("filename", .string(f.filename))
        fields.add("nb_streams", .int(f.streamCount))
        fields.add("nb_programs", .int(f.programCount))
        fields.add("format_name", .string(f.name))
        fields.add("format_long_name", f.longName.map(JSON.string))
        fields.add("start_time", f.startTime.map(seconds))
        fields.add("duration", f.duration.map(seconds))
        fields.add("size", f.size.map(number))
        fields.add("bit_rate", f.bitRate.map(number))
        fields.add("probe_score", .int(f.probeScore))
        if entries.isShown(.formatTags) { fields.add(tags: f.tags, section: .formatTags) }
        return fields.json
    }

    private static func program(_ p: ProgramDetails, streams: [Int: StreamDetails], _ entries: FFprobeEntries) -> JSON {
        var fields = Fields(section: .program, entries: entries)
        fields.add("program_id", .int(p.id))
        fields.add("program_num", .int(p.number))
        fields.add("nb_streams", .int(p.streamCount))
        fields.add("pmt_pid", .int(p.pmtPID))
        fields.add("pcr_pid", .int(p.pcrPID))
        if entries.isShown(.programTags) { fields.add(tags: p.tags, section: .programTags) }
        // ffprobe always prints the program's stream list, filtered like the top-level one.
        fields.section(
            "streams",
            .array(p.streamIndexes.compactMap { streams[$0] }.map { stream($0, in: .programStream, entries) }))
        return fields.json
    }

    /// One stream, in the top-level list (`.stream`) or in a program's (`.programStream`).
    private static func stream(
        _ s: StreamDetails, in section: FFprobeEntries.Section, _ entries: FFprobeEntries
    ) -> JSON {
        var fields = Fields(section: section, entries: entries)
        fields.add("index", .int(s.index))
        fields.add("codec_name", s.codecName.map(JSON.string))
        fields.add("codec_long_name", s.codecLongName.map(JSON.string))
        fields.add("profile", s.profile.map(JSON.string))
        fields.add("codec_type", s.codecType.map(JSON.string))
        fields.add("codec_tag_string", .string(s.codecTagString))
        fields.add("codec_tag", .string(String(format: "0x%04x", s.codecTag)))
        if let v = s.video {
            fields.add("width", .int(v.width))
            fields.add("height", .int(v.height))
            if let d = s.decoder {
                fields.add("coded_width", .int(d.codedWidth))
                fields.add("coded_height", .int(d.codedHeight))
                fields.add("closed_captions", .int(d.closedCaptions ? 1 : 0))
                fields.add("film_grain", .int(d.filmGrain ? 1 : 0))
            }
            fields.add("has_b_frames", .int(v.hasBFrames))
            fields.add("sample_aspect_ratio", v.sampleAspectRatio.map { ratio($0, ":") })
            fields.add("display_aspect_ratio", v.displayAspectRatio.map { ratio($0, ":") })
            fields.add("pix_fmt", v.pixelFormat.map(JSON.string))
            fields.add("level", .int(v.level))
            fields.add("color_range", v.colorRange.map(JSON.string))
            fields.add("color_space", v.colorSpace.map(JSON.string))
            fields.add("color_transfer", v.colorTransfer.map(JSON.string))
            fields.add("color_primaries", v.colorPrimaries.map(JSON.string))
            fields.add("chroma_location", v.chromaLocation.map(JSON.string))
            fields.add("field_order", v.fieldOrder.map(JSON.string))
            fields.add("refs", s.decoder.map { .int($0.refs) })
        }
        if let a = s.audio {
            fields.add("sample_fmt", a.sampleFormat.map(JSON.string))
            fields.add("sample_rate", number(Int64(a.sampleRate)))
            fields.add("channels", .int(a.channels))
            fields.add("channel_layout", a.channelLayout.map(JSON.string))
            fields.add("bits_per_sample", .int(a.bitsPerSample))
        }
        fields.add("width", s.subtitleWidth.map(JSON.int))
        fields.add("height", s.subtitleHeight.map(JSON.int))
        for (name, value) in s.decoder?.exportedOptions ?? [] { fields.add(name, .string(value)) }
        fields.add("id", s.id.map { .string(String(format: "0x%x", $0)) })
        fields.add("r_frame_rate", ratio(s.realFrameRate, "/"))
        fields.add("avg_frame_rate", ratio(s.averageFrameRate, "/"))
        fields.add("time_base", ratio(s.timeBase, "/"))
        fields.add("start_pts", s.startPTS.map(JSON.int))
        fields.add("start_time", s.startTime.map(seconds))
        fields.add("duration_ts", s.durationTS.map(JSON.int))
        fields.add("duration", s.duration.map(seconds))
        fields.add("bit_rate", s.bitRate.map(number))
        fields.add("max_bit_rate", s.decoder?.maxBitRate.map(number))
        fields.add("bits_per_raw_sample", s.decoder?.bitsPerRawSample.map { number(Int64($0)) })
        fields.add("nb_frames", s.frameCount.map(number))
        fields.add("extradata_size", s.extradataSize.map(JSON.int))
        let inProgram = section == .programStream
        if entries.isShown(.streamDisposition) || entries.isShown(.programStreamDisposition) {
            var flags = Fields(section: inProgram ? .programStreamDisposition : .streamDisposition, entries: entries)
            for (name, flag) in dispositions { flags.add(name, .int(s.disposition.contains(flag) ? 1 : 0)) }
            fields.section("disposition", flags.json)
        }
        if entries.isShown(.streamTags) || entries.isShown(.programStreamTags) {
            fields.add(tags: s.tags, section: inProgram ? .programStreamTags : .streamTags)
        }
        if !s.sideData.isEmpty {
            fields.section("side_data_list", .array(s.sideData.map { sideData($0, s, entries) }))
        }
        return fields.json
    }

    /// The dispositions ffprobe 5.1 lists, in its order (not every flag libavformat has).
    private static let dispositions: [(String, Disposition)] = [
        ("default", .default), ("dub", .dub), ("original", .original), ("comment", .comment), ("lyrics", .lyrics),
        ("karaoke", .karaoke), ("forced", .forced), ("hearing_impaired", .hearingImpaired),
        ("visual_impaired", .visualImpaired), ("clean_effects", .cleanEffects), ("attached_pic", .attachedPicture),
        ("timed_thumbnails", .timedThumbnails), ("captions", .captions), ("descriptions", .descriptions),
        ("metadata", .metadata), ("dependent", .dependent), ("still_image", .stillImage),
    ]

    private static func sideData(_ sd: SideData, _ s: StreamDetails, _ entries: FFprobeEntries) -> JSON {
        var fields = Fields(section: .streamSideData, entries: entries)
        fields.add("side_data_type", .string(sd.typeName))
        switch sd.content {
        case .displayMatrix(let matrix, let rotation):
            // Three rows of " %11d", each after its row number as "%08x: ".
            let rows = stride(from: 0, to: matrix.count, by: 3).enumerated().map { row, start in
                String(format: "%08x: ", row)
                    + matrix[start..<min(start + 3, matrix.count)].map { String(format: " %11d", $0) }.joined()
            }
            fields.add("displaymatrix", .string("\n" + rows.map { $0 + "\n" }.joined()))
            fields.add("rotation", .int(cInteger(rotation)))
        case .stereo3D(let type, let inverted):
            fields.add("type", .string(type))
            fields.add("inverted", .int(inverted ? 1 : 0))
        case .spherical(let sp):
            fields.add("projection", .string(sp.projection))
            fields.add("padding", sp.padding.map { .int(Int64($0)) })
            for (name, value) in zip(["bound_left", "bound_top", "bound_right", "bound_bottom"], sp.bounds ?? []) {
                fields.add(name, .int(value))
            }
            fields.add("yaw", .int(cInteger(sp.yaw)))
            fields.add("pitch", .int(cInteger(sp.pitch)))
            fields.add("roll", .int(cInteger(sp.roll)))
        case .skipSamples(let skip, let padding, let skipReason, let discardReason):
            fields.add("skip_samples", .int(Int64(skip)))
            fields.add("discard_padding", .int(Int64(padding)))
            fields.add("skip_reason", .int(Int64(skipReason)))
            fields.add("discard_reason", .int(Int64(discardReason)))
        case .masteringDisplay(let primaries, let luminance):
            let names = ["red_x", "red_y", "green_x", "green_y", "blue_x", "blue_y", "white_point_x", "white_point_y"]
            for (name, value) in zip(names, primaries ?? []) { fields.add(name, ratio(value, "/")) }
            if let luminance {
                fields.add("min_luminance", ratio(luminance.min, "/"))
                fields.add("max_luminance", ratio(luminance.max, "/"))
            }
        case .contentLightLevel(let maxContent, let maxAverage):
            fields.add("max_content", .int(Int64(maxContent)))
            fields.add("max_average", .int(Int64(maxAverage)))
        case .doviConfiguration(let d):
            let values = [
                ("dv_version_major", d.versionMajor), ("dv_version_minor", d.versionMinor), ("dv_profile", d.profile),
                ("dv_level", d.level), ("rpu_present_flag", d.rpuPresent), ("el_present_flag", d.elPresent),
                ("bl_present_flag", d.blPresent), ("dv_bl_signal_compatibility_id", d.blSignalCompatibilityID),
            ]
            for (name, value) in values { fields.add(name, .int(Int64(value))) }
        case .audioServiceType(let type):
            fields.add("service_type", .int(Int64(type)))
        case .mpegtsStreamID(let id):
            fields.add("id", .int(Int64(id)))
        case .cpbProperties(let maxRate, let minRate, let averageRate, let bufferSize, let vbvDelay):
            fields.add("max_bitrate", .int(maxRate))
            fields.add("min_bitrate", .int(minRate))
            fields.add("avg_bitrate", .int(averageRate))
            fields.add("buffer_size", .int(bufferSize))
            fields.add("vbv_delay", .int(Int64(bitPattern: vbvDelay)))
        case .activeFormat(let format):
            fields.add("active_format", .int(Int64(format)))
        case .other:
            break
        }
        return fields.json
    }

    /// Seconds as ffprobe prints times: `printf("%f")`, a string.
    private static func seconds(_ value: Double) -> JSON { .string(String(format: "%f", value)) }

    /// A count or rate that ffprobe prints as a string of digits (`"bit_rate": "242126"`).
    private static func number(_ value: Int64) -> JSON { .string(String(value)) }

    /// `num/den` (rates, time bases) or `num:den` (aspect ratios), a string.
    private static func ratio(_ r: Rational, _ separator: String) -> JSON { .string("\(r.num)\(separator)\(r.den)") }

    /// What C's conversion of a double to `long long` gives on x86-64, as ffprobe prints degrees
    /// (toward zero; NaN and out-of-range values become the smallest integer).
    private static func cInteger(_ value: Double) -> Int64 {
        value.isNaN || value >= 0x1p63 || value < -0x1p63 ? Int64.min : Int64(value)
    }

    /// The members of one section, each kept only when the section shows its key.
    private struct Fields {
        let section: FFprobeEntries.Section
        let entries: FFprobeEntries
        private(set) var members: [(String, JSON)] = []

        init(section: FFprobeEntries.Section, entries: FFprobeEntries) {
            self.section = section
            self.entries = entries
        }

        var json: JSON { .object(members) }

        /// A key and its value; nil is a value ffprobe leaves out.
        mutating func add(_ key: String, _ value: JSON?) {
            guard let value, entries.shows(key, in: section) else { return }
            members.append((key, value))
        }

        /// A nested section, printed whatever keys this one shows (its own entries decide its content).
        mutating func section(_ name: String, _ value: JSON) { members.append((name, value)) }

        /// A `tags` object, unless there are none.
        mutating func add(tags: [(String, String)], section tagSection: FFprobeEntries.Section) {
            guard !tags.isEmpty else { return }
            var object = Fields(section: tagSection, entries: entries)
            for (key, value) in tags { object.add(key, .string(value)) }
            section("tags", object.json)
        }
    }
}
