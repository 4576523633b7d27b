import ByteSources
import Caching
import Containers
import FFmpeg
import Support

/// Where a container's seek points are, asked the three questions the jobs have: which bytes hold
/// a window (prefetch, check), which key frame is at or before a time (thumbnails), which times are
/// cached (buffered ranges). One type per way a container places its seeks — MP4 sample tables
/// (`SampleTableIndex`), fragments placed by an `mfra`, `sidx` or the moof chain (`FragmentIndex`),
/// Matroska Cues (`MatroskaCuesIndex`) or its Clusters (`MatroskaClusterIndex`), an MP3's table of
/// contents (`MP3TableOfContents`), the bit rate (`BitRateIndex`) — chosen once when the input is
/// opened (`OpenedInput.seekIndex`), as Media3 gives each extractor one `SeekMap`.
///
/// What an index knows comes from the container's parsers and from libavformat's index as the
/// demuxer fills it (a Matroska file's Cues on its first seek, fragments as their moofs are read):
/// an index reads that when asked, not when made, so choosing one costs a probe nothing.
protocol SeekIndex {
    var context: FormatContext { get }
    var source: any MediaSource { get }

    /// The bytes that hold `query`'s window: each sample, the stretch between two seek points, or
    /// an estimate from the bit rate when nothing places it.
    func window(_ query: WindowQuery) throws -> SeekWindow

    /// Reads what the key frames' times need before they are asked for (the start time, and the
    /// duration where the container does not state it); `timesGiven` when they come from a
    /// stream's playlist, which states its own.
    func learnTimes(of video: Int, timesGiven: Bool) throws

    /// The key frame at or before each of `query`'s times.
    func keyFrames(_ query: KeyFrameQuery) throws -> KeyFrameLookup

    /// Whether libavformat's seeks to a time land on this index's points (else a thumbnail's frame
    /// is found by seeking through the file).
    func placesSeeks(of video: Int) -> Bool

    /// Seconds, the longest track's, as the index or the container states them.
    var statedDuration: Double? { get }

    /// `statedDuration`, or else what the track or the file's tail says.
    func duration(of stream: Int) throws -> Double?

    /// For each of `streams` (all when nil), the time ranges whose bytes are all cached.
    func buffered(streams: [Int]?) -> [TrackBuffer]
}

extension SeekIndex {
    var statedDuration: Double? { context.durationSeconds }

    func duration(of stream: Int) throws -> Double? { statedDuration ?? context.duration(stream: stream) }

    /// libavformat's seeks land on the points its index holds by position (an MP3's table of
    /// contents, a demuxer's own key frame list).
    func placesSeeks(of video: Int) -> Bool { !context.positionedPoints(stream: video).isEmpty }

    /// Only samples whose sizes libavformat's index gives can be counted as cached; points that
    /// give positions only (Cues, a table of contents) count nothing.
    func buffered(streams: [Int]?) -> [TrackBuffer] { context.sampleBuffers(source: source, streams: streams) }
}

extension OpenedInput {
    /// The seek index of this input's container.
    static func seekIndex(
        context: FormatContext, source: any MediaSource, layout: MP4Layout?, timeline: FragmentTimeline?
    ) throws -> any SeekIndex {
        if let timeline {
            return FragmentIndex(
                timeline: timeline, layout: layout,
                libavformat: SampleTableIndex(context, source: source, layout: layout))
        }
        if let head = try MatroskaHead(context, source: source) {
            // Without Cues, libavformat's index holds the key frames of the Clusters it has read.
            return head.cues == false
                ? MatroskaClusterIndex(context, source: source, head: head)
                : MatroskaCuesIndex(context, source: source, head: head)
        }
        if context.formatName.hasPrefix("matroska") { return MatroskaCuesIndex(context, source: source, head: nil) }
        if context.formatName == "mp3" { return MP3TableOfContents(context, source: source) }
        let sized = (0..<context.streamCount).contains { !context.indexEntries(stream: $0).isEmpty }
        if layout != nil || sized { return SampleTableIndex(context, source: source, layout: layout) }
        return BitRateIndex(context, source: source)
    }
}

/// A window asked of a seek index: `seconds` from `start` (seconds from the container's start, as
/// the user gave them) of `streams`, video first.
struct WindowQuery {
    let streams: [Int]
    let start: Double
    let seconds: Double
    let cancellation: Cancellation
    /// Where the window starts and ends as the container counts.
    let from: Double
    let to: Double

    init(streams: [Int], start: Double, seconds: Double, containerStart: Double, cancellation: Cancellation) {
        (self.streams, self.start, self.seconds, self.cancellation) = (streams, start, seconds, cancellation)
        from = containerStart + start
        to = from + seconds
    }
}

/// The bytes that hold a window.
enum SeekWindow {
    /// Every sample of it, from an index that gives each one's size, and what each track plays.
    case samples(ByteRangeSet, tracks: [PrefetchPlan.Track])
    /// The stretch between the seek points around it, which give positions but not sizes.
    case points(PointWindow)
    /// A guess from the bit rate: nothing places the window.
    case estimated(Range<Int64>, why: String)
}

/// Key frames asked of a seek index, for thumbnails.
struct KeyFrameQuery {
    let video: Int
    /// The times asked for, seconds from `offset` (a time before 0 is taken as 0).
    let requested: [Double]
    /// Where the times count from, as the container counts.
    let offset: Double
    let duration: Double?
    let connections: Int
    let cancellation: Cancellation

    /// The times as the container counts them.
    var times: [Double] { requested.map { offset + max(0, $0) } }
}

/// What a seek index found of the key frames asked for; `unplaced` when a fragmented MP4's key
/// frames, to be found from their bytes (`FragmentScan`), could not be: libavformat then reads
/// every moof instead (`.everyChained`).
enum KeyFrameLookup {
    case found(KeyFrames)
    case unplaced
}

struct KeyFrames {
    /// For each time asked, the key frame to decode; nil where the frame is found by seeking.
    var chosen: [IndexEntry?]
    /// The key frames the index lists: the first one starts the file.
    var listed: [IndexEntry]
    /// The key frames `--skip-black` may go on to after a blank one.
    var candidates: [IndexEntry]
    /// Decoded from their bytes, one packet each, not through the demuxer (which has not read
    /// their fragments).
    var fromBytes = false
    /// Where the fragment of a key frame found in one ends: the frames after it, for `--accurate`.
    var fragmentEnds: [(key: IndexEntry, end: Int64)] = []
    /// That the file ends inside a key frame the index lists, told before the notes on the times.
    var cut: String?
    /// What to tell the user of how they were found, after the notes on the times.
    var notes: [String] = []

    /// Each time's key frame from `listed`: the last at or before it (the first, before any).
    init(
        listed: [IndexEntry], at times: [Double], candidates: [IndexEntry]? = nil, cut: String? = nil,
        notes: [String] = []
    ) {
        chosen = times.map { time in listed.last(where: { $0.time <= time }) ?? listed.first }
        (self.listed, self.candidates, self.cut, self.notes) = (listed, candidates ?? listed, cut, notes)
    }

    func fragmentEnd(of key: IndexEntry) -> Int64? { fragmentEnds.first { $0.key == key }?.end }
}
