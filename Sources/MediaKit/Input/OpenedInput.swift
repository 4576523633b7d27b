import ByteSources
import Containers
import FFmpeg

/// What an input is, once opened: media for libavformat, or an HLS playlist or DASH manifest for
/// the stream jobs (libavformat's readers of those would fetch the segments themselves, around
/// the cache).
enum Opened {
    case media(OpenedInput)
    case stream(any MediaSource, kind: String)

    /// The media, for a job that does not read streams: a playlist is `MediaError.streamingManifest`.
    func media() throws -> OpenedInput {
        switch self {
        case .media(let opened): return opened
        case .stream(let source, let kind): throw MediaError.streamingManifest(input: source.input, kind: kind)
        }
    }
}

/// An input opened for demuxing the way every job does it: the source from the session, the
/// ISO-BMFF walk that fetches the moov first, then libavformat over the cache.
struct OpenedInput {
    let source: any MediaSource
    let layout: MP4Layout?
    let context: FormatContext
    /// Where the tracks of a fragmented MP4 end and where its sync samples are, read from its index
    /// and last fragment, when libavformat was told not to read every fragment (`FormatContext.Fragments`).
    let fragmentTimeline: FragmentTimeline?
    /// Where its container places seeks: what prefetch, check, buffered ranges and thumbnails ask.
    let seekIndex: any SeekIndex
    /// The source's counters before this job touched it, to report what the job cost.
    let before: SourceCounters
    /// With `fragments` other than `.every`, a fragmented MP4 with many fragments
    /// (`MP4Layout.manyFragments`) has its timeline read by `FragmentTimeline`, and
    /// libavformat reads only its first fragment (`.first`, for a probe) or the ones a seek reaches
    /// through its `sidx` or `mfra` (`.throughIndex`, which needs one); the timeline is
    /// `fragmentTimeline`. A file whose timeline cannot be read has every fragment read, as
    /// libavformat does by itself.
    static func open(
        _ input: String, session: MediaSession, findStreamInfo: Bool, fragments: FormatContext.Fragments = .every,
        walker: BoxWalker = BoxWalker()
    ) throws -> Opened {
        FFmpegLibraries.loadInBackground()
        return try open(
            source: try session.open(input), session: session, findStreamInfo: findStreamInfo, fragments: fragments,
            walker: walker)
    }

    /// The same over a source made by the caller (a segment of a stream: `SpanSource`).
    static func open(
        source: any MediaSource, session: MediaSession, findStreamInfo: Bool,
        fragments: FormatContext.Fragments = .every, walker: BoxWalker = BoxWalker()
    ) throws -> Opened {
        FFmpegLibraries.loadInBackground()
        let before = source.counters
        var walker = walker
        let firstRequest = walker.firstRequest
        let namedMP3 = MPEGAudioFrames.namesAnMP3(source.input) && firstRequest > MPEGAudioFrames.firstRequest
        if namedMP3 { walker.firstRequest = MPEGAudioFrames.firstRequest }
        let layout = try walker.walk(source)  // first, so its first request also learns the size
        // Said plainly, the same for a file and a URL (libavformat's answer depends on the name).
        if try source.size() == 0 { throw MediaError.empty(input: source.input) }
        if layout == nil, let kind = try StreamingManifest.kind(of: source) { return .stream(source, kind: kind) }
        return .media(
            try OpenedInput(
                source: source, session: session, layout: layout, before: before, firstRequest: firstRequest,
                namedMP3: namedMP3, findStreamInfo: findStreamInfo, fragments: fragments))
    }

    /// The rest of `open` for media: the fragments' timeline, the head read, libavformat.
    private init(
        source: any MediaSource, session: MediaSession, layout: MP4Layout?, before: SourceCounters, firstRequest: Int64,
        namedMP3: Bool, findStreamInfo: Bool, fragments: FormatContext.Fragments
    ) throws {
        self.source = source
        self.layout = layout
        self.before = before
        var fragments = fragments
        var timeline: FragmentTimeline?
        if let layout, layout.manyFragments(fileSize: try source.size(), probing: fragments == .first) {
            timeline = try FragmentTimeline.prepare(layout, fragments: &fragments, source: source, session: session)
        }
        // A probe of a file without boxes, and any job on a Matroska file or an MP3, reads the
        // head in at most `probeHeadRead` or `headRead` bytes, or to the end of the MP3's ID3 tag
        // and first frames (the first request's and one more), not a readahead window doubled
        // past what the analysis reads: 0.5 MB of a Matroska file's first Cluster for a prefetch
        // of 3.2 MB at 300 s. (An MPEG-TS's full analysis reads seconds of packets: there the
        // doubling windows serve it in fewer requests.)
        let probesHead = fragments == .first && layout == nil
        let mp3Head = layout != nil ? nil : MPEGAudioFrames.headEnd(source)
        let head =
            mp3Head ?? (probesHead ? OpenedInput.probeHeadRead : nil)
            ?? (layout == nil ? MatroskaHead.headRead(of: source) : nil)
            ?? (namedMP3 ? firstRequest : nil)  // a .mp3 name that is no MP3 (or one after junk): what its first request held
        if let head { source.limitReadahead(to: head) }
        defer { if head != nil { source.limitReadahead(to: nil) } }
        if timeline == nil { fragments = .every }
        fragmentTimeline = fragments == .every ? nil : timeline
        let open = { [fragments] (headAnalysis: Int64) in
            do {
                return try FormatContext(
                    source: source, findStreamInfo: findStreamInfo, fragments: fragments,
                    headAnalysis: headAnalysis,
                    readSize: mp3Head == nil ? nil : MPEGAudioFrames.readSize,
                    cancellation: session.cancellation)
            } catch let error as FFmpegError {
                throw OpenedInput.mediaError(error, input: source.input, layout: layout, source: source)
            }
        }
        // A probe analyses an MPEG-TS from its head, its durations from its tail.
        let context =
            try probesHead && findStreamInfo ? TransportStreamTail.analysed(by: open, source: source) : open(0)
        self.context = context
        seekIndex = try OpenedInput.seekIndex(
            context: context, source: source, layout: layout, timeline: fragmentTimeline)
    }

    /// The head read of a file that has no box index to say where its header ends.
    static let headRead: Int64 = 256 << 10
    /// The same for a probe, whose analysis stops within it (an MPEG-TS's: `FormatContext.headAnalysisBytes`;
    /// a 720p Matroska file's by itself): with a tail read of as much where the duration is at the
    /// end (`TransportStreamTail`, `MatroskaTail`), a probe reads no more than 256 KiB past the header.
    static let probeHeadRead: Int64 = 128 << 10

    /// What this job has cost so far.
    var cost: SourceCounters { source.counters.since(before) }

    /// What the user should hear about this input: the source's notes and a damaged box layout.
    var warnings: [String] {
        source.warnings + (layout?.damaged.map { ["\(source.input): \($0)"] } ?? [])
    }

    /// FFmpeg's error, said as what is wrong with the media.
    private static func mediaError(
        _ error: FFmpegError, input: String, layout: MP4Layout?,
        source: any MediaSource
    ) -> MediaError {
        if let layout, layout.moov == nil {
            // libavformat could not use an ISO-BMFF file without a moov (some HEIF images it can):
            // say what is missing instead of FFmpeg's generic error.
            return .noMoov(
                input: input, detail: layout.damaged ?? "boxes: " + layout.boxes.map(\.type).joined(separator: ","))
        }
        if error.isInvalidData && error.function == "avformat_open_input" && layout == nil {
            return .notMedia(input: input)
        }
        // "Cannot allocate memory" and the like: the sample tables say what is wrong, where they can.
        if let moov = layout?.moov, let problem = SampleTables(moov: moov, source: source).problem() {
            return .malformed(input: input, detail: problem)
        }
        let detail = layout?.damaged.map { "\($0); " } ?? ""
        return .malformed(input: input, detail: detail + error.description)
    }
}

extension SourceCounters {
    /// This and `other`, counted together.
    func adding(_ other: SourceCounters) -> SourceCounters {
        var c = self
        c.requests += other.requests
        c.connections += other.connections
        c.bytesFetched += other.bytesFetched
        c.bytesFromCache += other.bytesFromCache
        return c
    }

    /// What was counted after `earlier`.
    func since(_ earlier: SourceCounters) -> SourceCounters {
        var c = SourceCounters()
        c.requests = requests - earlier.requests
        c.connections = connections - earlier.connections
        c.bytesFetched = bytesFetched - earlier.bytesFetched
        c.bytesFromCache = bytesFromCache - earlier.bytesFromCache
        return c
    }
}
