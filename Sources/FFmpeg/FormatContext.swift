import ByteSources
import CFFmpeg
import Caching
import Foundation
import RangeFetch
import Support

/// An opened demuxer reading a `MediaSource` through an `AVIOBridge`: the single owner of the
/// `AVFormatContext` (closed in `deinit`) and of the bridge, which outlives it.
public final class FormatContext {
    let pointer: UnsafeMutablePointer<AVFormatContext>
    private let bridge: AVIOBridge
    /// Its stream info was read from the first packets only (`headAnalysis`).
    package private(set) var analysedFromTheHead = false
    /// An MPEG-TS probed from its head, whose durations `TransportStreamTail` is to set.
    package private(set) var durationsLeftToTheTail = false

    /// How libavformat's mov demuxer reads the `moof` boxes of a fragmented MP4.
    public enum Fragments: Equatable, Sendable {
        /// Every one, before the header counts as read (libavformat's way for a seekable input).
        case every
        /// Only the first (`AVFMT_FLAG_IGNIDX` stops the header at the first media data): for a probe.
        case first
        /// The first, and the others when a seek reaches them, found through the `mfra` index
        /// (`use_mfra_for`, decode times): for jobs that seek. With `oneStream` (jobs that decode
        /// one stream and discard the others) streams are not each seeked to their own fragment:
        /// that read another moof per seek, the one the audio's seek landed on.
        case throughIndex(oneStream: Bool)
        /// For thumbnails: as `throughIndex(oneStream: true)` given an index; without one (no
        /// `sidx`, no `mfra`), as `first`, the key frames then found by `FragmentScan` and decoded
        /// from their bytes (libavformat could reach them only by reading every `moof`).
        /// `OpenedInput` decides which for a fragmented file; anything else reads as `every`.
        case keyFrames
        /// Every one, each fetched ahead of libavformat in one small range (`MoofChain`), the
        /// index left aside: for thumbnails the index could not place.
        case everyChained
    }

    /// Opens `source` and reads the container header; with `findStreamInfo`, also reads the first
    /// packets as libavformat needs to fill in what the header lacks (pixel format, frame rate...).
    /// The corresponding FFmpeg functions are `avformat_open_input` and `avformat_find_stream_info`.
    public convenience init(
        source: any MediaSource, findStreamInfo: Bool = true, cancellation: Cancellation? = nil
    ) throws {
        try self.init(source: source, findStreamInfo: findStreamInfo, fragments: .every, cancellation: cancellation)
    }

    /// With `fragments` other than `.every` (for a file whose timeline the caller has read in its
    /// place: `FragmentTimeline`), libavformat does not read every `moof`, and its stream info comes from the first video key frame alone: a
    /// fragment holds each track's samples in one run, video first, so the first audio packet is
    /// half a megabyte into a two-second 720p fragment.
    ///
    /// With `headAnalysis` (a probe: 1, 4, 16...), an MPEG-TS has its stream info read from the
    /// head alone (that many times `headAnalysisBytes`) instead of libavformat's 5 s: without an
    /// index that is bytes nobody else needs, and the durations come from the tail's timestamps
    /// all the same.
    public init(
        source: any MediaSource, findStreamInfo: Bool, fragments: Fragments, headAnalysis: Int64 = 0,
        readSize: Int32? = nil, cancellation: Cancellation?
    ) throws {
        try FFmpegLibraries.require()
        FFmpegLog.quietByDefault()
        FFmpegMemory.capOnce()
        bridge = try AVIOBridge(
            source: source, cancellation: cancellation, bufferSize: readSize ?? AVIOBridge.bufferSize)
        guard let context = ff.avformat_alloc_context() else {
            throw FFmpegError(code: mp_averror(ENOMEM), function: "avformat_alloc_context")
        }
        context.pointee.pb = bridge.context
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        // Nothing but this context's own input: a nested open would fetch around the cache.
        mp_refuse_nested_opens(context)
        if fragments != .every { context.pointee.flags |= AVFMT_FLAG_IGNIDX }
        context.pointee.interrupt_callback = AVIOInterruptCB(
            callback: avioInterrupt,
            opaque: Unmanaged.passUnretained(bridge).toOpaque())
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        // As ffmpeg and ffprobe open inputs: an MPEG-TS demuxer reads every program's PMT, not
        // only the first, before the header counts as read (other demuxers ignore the option).
        var options: OpaquePointer?
        _ = ff.av_dict_set(&options, "scan_all_pmts", "1", 0)
        // An MP3's Xing table of contents (where each hundredth of the duration starts) becomes
        // index entries: seeks use it instead of assuming a constant bit rate, and so does a plan.
        _ = ff.av_dict_set(&options, "usetoc", "1", 0)
        if case .throughIndex(let oneStream) = fragments {
            _ = ff.av_dict_set(&options, "use_mfra_for", "dts", 0)
            if oneStream { _ = ff.av_dict_set(&options, "seek_streams_individually", "0", 0) }
        }
        defer { ff.av_dict_free(&options) }
        // The name only hints the format prober (by extension); bytes come from the bridge.
        let rc = ff.avformat_open_input(&opened, FormatContext.nameHint(source.input), nil, &options)
        guard rc >= 0, let opened else {
            // avformat_open_input freed the context; the bridge (our AVIOContext) goes with self.
            throw FormatContext.failure(rc, "avformat_open_input", bridge: bridge)
        }
        if findStreamInfo {
            let set = fragments == .every ? [] : FormatContext.limitStreamInfoToTheFirstKeyFrame(opened)
            let format = String(cString: opened.pointee.iformat.pointee.name)
            // An MP3's parsed frames carry no decode time for the analysis to wait for: it would
            // read 50 of them (1.6 s, 28 KiB of a 140 kb/s file's head) for what the first tells —
            // where its header states the duration (Xing, Info, VBRI); without one the duration
            // is the size over the bit rate of those frames, as ffprobe takes it.
            if format == "mp3", opened.pointee.nb_streams > 0, let st = opened.pointee.streams[0],
                st.pointee.duration > 0,
                st.pointee.duration != mp_av_nopts_value()
            {
                opened.pointee.max_ts_probe = 1
            }
            if headAnalysis > 0, let bytes = FormatContext.headAnalysisBytes[format] {
                opened.pointee.probesize = bytes * headAnalysis
                analysedFromTheHead = true
            }
            // Its durations from a tail read sized for a probe (TransportStreamTail), not the last 250,000 bytes.
            if headAnalysis > 0 && format == "mpegts" && opened.pointee.nb_programs <= 1 {
                opened.pointee.skip_estimate_duration_from_pts = 1
                durationsLeftToTheTail = true
            }
            let rc = ff.avformat_find_stream_info(opened, nil)
            for stream in set { stream.pointee.discard = AVDISCARD_DEFAULT }
            if rc < 0 {
                // Closed here, before `pointer` is set: a throwing init must not leave it to deinit too.
                var context: UnsafeMutablePointer<AVFormatContext>? = opened
                ff.avformat_close_input(&context)
                throw FormatContext.failure(rc, "avformat_find_stream_info", bridge: bridge)
            }
        }
        pointer = opened
    }

    /// Containers whose probe analyses only their head, and how many bytes of packets: without an
    /// index libavformat's analysis reads 5 s of packets for what the first ones tell, and the
    /// demuxer's buffering takes what it reads half as much again. An MPEG-TS carries its
    /// parameter sets in its packets; its AAC bit rate is a running average over them (124,593 b/s
    /// over 0.2 s where ffprobe's is 130,584 over 5 s, for a true 130,596). (Not Matroska: 32 KiB
    /// of its packets lost the start time of most files, the frame rate of variable-rate WebM —
    /// 1000 for 30 — and AC-3's channel layout. Its analysis stops by itself, within 128 KiB of
    /// a 720p recording.)
    static let headAnalysisBytes: [String: Int64] = ["mpegts": 64 << 10]

    /// The stream info of a fragmented file from its first video key frame: the key frame gives the
    /// video's pixel format; libavformat's frame-rate estimate would read a second of video and the
    /// first audio packet the fragment's whole video. The other tracks keep what the header states
    /// (their timing comes from `FragmentTimeline`). Returns the streams set aside, to be read
    /// again afterwards.
    private static func limitStreamInfoToTheFirstKeyFrame(
        _ context: UnsafeMutablePointer<AVFormatContext>
    )
        -> [UnsafeMutablePointer<AVStream>]
    {
        let streams = (0..<Int(context.pointee.nb_streams)).compactMap { context.pointee.streams[$0] }
        let others = streams.filter { $0.pointee.codecpar.pointee.codec_type != AVMEDIA_TYPE_VIDEO }
        guard others.count < streams.count else { return [] }  // no video: the samples start the media data
        for stream in others { stream.pointee.discard = AVDISCARD_ALL }
        context.pointee.probesize = firstPacketsBytes
        return others
    }

    /// An analysis of the first packets only: libavformat reads on past this many bytes until it
    /// has one packet of each stream (a key frame larger than this is read whole).
    package static let firstPacketsBytes: Int64 = 32 << 10

    deinit {
        var context: UnsafeMutablePointer<AVFormatContext>? = pointer
        ff.avformat_close_input(&context)
    }

    /// Reads the first packets to fill in what the header lacks (duration and start time of
    /// containers without an index, such as MPEG-TS), for a context opened without it; with
    /// `bytes`, no more packets than that many bytes of them, past the first of each stream.
    public func findStreamInfo(bytes: Int64? = nil) throws {
        let probesize = pointer.pointee.probesize
        if let bytes { pointer.pointee.probesize = bytes }
        defer { pointer.pointee.probesize = probesize }
        let rc = ff.avformat_find_stream_info(pointer, nil)
        if rc < 0 { throw failure(rc, "avformat_find_stream_info") }
    }

    /// The error to report for a failed call on this context: what the read path said, else FFmpeg's.
    func failure(_ code: Int32, _ function: String) -> Error { FormatContext.failure(code, function, bridge: bridge) }

    /// The error to report: what the read path said (HTTP, offline...), else FFmpeg's.
    private static func failure(_ code: Int32, _ function: String, bridge: AVIOBridge) -> Error {
        if let error = bridge.lastError { return error }
        if bridge.interrupted || code == mp_averror_exit() { return MediaError.interrupted }
        return FFmpegError(code: code, function: function)
    }

    /// The file name in `input` (a path, or a URL's last path component without its query).
    package static func nameHint(_ input: String) -> String {
        let path = input.split(separator: "?", maxSplits: 1).first.map(String.init) ?? input
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    /// The byte ranges libavformat has read so far.
    public var bytesRead: ByteRangeSet { bridge.bytesRead }

    /// The error behind the last failed read (network, offline miss), if any.
    var readError: Error? { bridge.lastError }

    /// The read callback stopped libavformat because the job was cancelled.
    var interrupted: Bool { bridge.interrupted }

    /// libavformat's short name for the container, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var formatName: String { String(cString: pointer.pointee.iformat.pointee.name) }

    public var streamCount: Int { Int(pointer.pointee.nb_streams) }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream>? {
        guard index >= 0, index < streamCount else { return nil }
        return pointer.pointee.streams[index]
    }

    /// The codec name of each stream, in stream order.
    public var codecNames: [String] { (0..<streamCount).map { codecName(stream: $0) } }

    /// libavcodec's name for the codec of stream `index` (`none` when it has no descriptor).
    package func codecName(stream index: Int) -> String {
        stream(index).map { FormatContext.codecName($0.pointee.codecpar.pointee.codec_id) } ?? "unknown"
    }

    static func codecName(_ id: AVCodecID) -> String {
        ff.avcodec_get_name(id).map { String(cString: $0) } ?? "unknown"
    }
}

/// FFmpeg logs to stderr by default; library code must not print, so it is silenced unless the
/// CLI asks for it (`-v`). The level is process-wide in FFmpeg, hence set once.
public enum FFmpegLog {
    private static let silenced: Void = ff.av_log_set_level(AV_LOG_QUIET)

    static func quietByDefault() { _ = silenced }

    /// Lets FFmpeg print warnings and errors (for `-v`). Without its libraries there is nothing to
    /// show; opening the input then reports them missing.
    public static func showWarnings() {
        guard (try? FFmpegLibraries.require()) != nil else { return }
        _ = silenced
        ff.av_log_set_level(AV_LOG_WARNING)
    }
}

/// FFmpeg refuses any single allocation above a process-wide limit, 2 GiB by default. A damaged
/// fragment that claims 67 million samples got 1.6 GiB for its index in one allocation and made a
/// 110 KB file cost 2.1 GiB of memory; the largest real single allocations (the index of a day of
/// 60 fps video, an 8K frame) stay under 150 MB. Lowered once, before the first demuxer opens:
/// such a file then fails as "would need more memory than FFmpeg allows".
enum FFmpegMemory {
    static let singleAllocationLimit = 512 << 20
    private static let capped: Void = ff.av_max_alloc(singleAllocationLimit)

    static func capOnce() { _ = capped }
}
