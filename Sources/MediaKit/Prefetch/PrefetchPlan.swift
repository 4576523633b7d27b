import ByteSources
import FFmpeg
import Support

/// The byte ranges a player needs to start at `start` and play `seconds`, computed from the
/// demuxer's index before any sample is fetched. A value: print it, store it, fetch it.
public struct PrefetchPlan: Sendable {
    public struct Track: Sendable {
        public let index: Int
        public let kind: TrackInfo.Kind
        /// Samples in the window (for video, from the key frame at or before the start). Nil for a
        /// window placed by positions (Cues, a table of contents, fragments) whose bytes are not
        /// here to count: the index says where the window lies, not what it holds.
        public let samples: Int?
        public let bytes: Int64?
        /// Decode times of the first and last planned sample, seconds.
        public let firstTime: Double?
        public let lastTime: Double?
    }

    public let input: String
    public let start: Double
    public let seconds: Double
    public let tracks: [Track]
    /// What libavformat reads to open the file (for MP4: ftyp, moov, box headers, first packets).
    public let headerRanges: [Range<Int64>]
    /// The window's samples, merged where the gap between them is at most `PrefetchPlanner.mergeGap`.
    public let sampleRanges: [Range<Int64>]
    /// What players of `PrefetchPlanner.players` read besides (`PlayerProfile`), each with who
    /// reads it and why.
    public var playerRanges: [PlayerRange] = []
    /// The parts of all the above that are not cached yet: what the prefetch requests.
    public let missing: [Range<Int64>]
    /// The container has no usable index: `sampleRanges` is a byte window estimated from the bit rate.
    public let estimated: Bool
    public let note: String?

    /// Header bytes plus the bytes of the planned samples: the least a prefetch must move.
    public let floorBytes: Int64
    /// An MP3 window its table of contents placed by proportion: the prefetch walks its frames to
    /// where it really ends (`MPEGAudioFrames`).
    var walksAudioFrames = false

    public var missingBytes: Int64 { missing.reduce(0) { $0 + Int64($1.count) } }

    /// Bytes some players read that libavformat does not.
    public struct PlayerRange: Sendable {
        public let range: Range<Int64>
        /// The profiles' names.
        public let players: [String]
        public let why: String
    }

    /// Every range the prefetch keeps: the header, the samples and the players' ranges.
    public var allRanges: [Range<Int64>] { headerRanges + sampleRanges + playerRanges.map(\.range) }
}

/// What a prefetch did: its plan, what fetching cost, and the time ranges now cached per track.
public struct PrefetchResult: Sendable {
    public let plan: PrefetchPlan
    public let fetched: SourceCounters
    public let seconds: Double
    public let buffered: [TrackBuffer]

    public init(plan: PrefetchPlan, fetched: SourceCounters, seconds: Double, buffered: [TrackBuffer]) {
        self.plan = plan
        self.fetched = fetched
        self.seconds = seconds
        self.buffered = buffered
    }
}

extension Prefetcher {
    /// Blocks until every missing range of the plan is stored or one failed (the others then stop early).
    public func fetch(_ plan: PrefetchPlan, source: any MediaSource, cancellation: Cancellation) throws {
        try fetch(plan.missing, source: source, cancellation: cancellation)
    }
}
