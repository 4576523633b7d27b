/// Everything libavformat, and a decoder opened (never fed) for each stream, tell about an input:
/// the fields `ffprobe -show_format -show_streams` reports, each as FFmpeg holds it. A field is nil
/// where ffprobe prints nothing (`N/A` or `unknown` in its other output formats).
public struct ProbeDetails: Sendable {
    public var format: FormatDetails
    /// The streams `-select_streams` chose (all of them without it), in stream order.
    public var streams: [StreamDetails]
    /// MPEG-TS programs (and those of other containers that have them).
    public var programs: [ProgramDetails]
    /// Things the user should hear once (a server that ignores ranges, a damaged box layout).
    public var warnings: [String] = []
}

/// A fraction as FFmpeg keeps it (`AVRational`), printed by ffprobe as `num/den` or `num:den`.
public struct Rational: Sendable, Equatable {
    public var num: Int32
    public var den: Int32

    public init(_ num: Int32, _ den: Int32) {
        self.num = num
        self.den = den
    }
}

public struct FormatDetails: Sendable {
    /// The input as shown (credentials redacted).
    public var filename: String
    public var streamCount: Int
    public var programCount: Int
    /// libavformat's short name, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var name: String
    public var longName: String?
    /// Seconds; nil when libavformat does not know.
    public var startTime: Double?
    public var duration: Double?
    public var size: Int64?
    public var bitRate: Int64?
    /// How sure libavformat's format probe was (100 = the header says so).
    public var probeScore: Int
    /// Entries in the container's order; invalid UTF-8 dropped, as ffprobe does.
    public var tags: [(String, String)]
}

public struct ProgramDetails: Sendable {
    public var id: Int
    public var number: Int
    /// How many streams the program has, selected or not.
    public var streamCount: Int
    public var pmtPID: Int
    public var pcrPID: Int
    public var tags: [(String, String)]
    /// The program's streams that are selected, as indexes into the input's streams.
    public var streamIndexes: [Int]
}

public struct StreamDetails: Sendable {
    public var index: Int
    /// libavcodec's descriptor: nil for a codec it has no descriptor for.
    public var codecName: String?
    public var codecLongName: String?
    /// The profile's name, else its number; nil when unknown.
    public var profile: String?
    /// `video`, `audio`, `subtitle`, `data`, `attachment`; nil when unknown.
    public var codecType: String?
    /// The fourcc as stored (`avc1`), unprintable bytes as `[N]`, and as a number.
    public var codecTagString: String
    public var codecTag: UInt32
    public var video: VideoDetails?
    public var audio: AudioDetails?
    /// Subtitle picture size; nil when 0.
    public var subtitleWidth: Int?
    public var subtitleHeight: Int?
    /// What the opened decoder knows; nil when libavcodec has no decoder for the codec.
    public var decoder: DecoderDetails?
    /// The container's stream id (MPEG-TS PID, ...), for containers that show ids.
    public var id: Int32?
    public var realFrameRate: Rational
    public var averageFrameRate: Rational
    public var timeBase: Rational
    /// In the time base, and in seconds (nil: not known).
    public var startPTS: Int64?
    public var startTime: Double?
    public var durationTS: Int64?
    public var duration: Double?
    public var bitRate: Int64?
    /// The count the container states; nil when 0.
    public var frameCount: Int64?
    public var extradataSize: Int?
    public var disposition: Disposition
    public var tags: [(String, String)]
    public var sideData: [SideData]
}

public struct VideoDetails: Sendable {
    public var width: Int
    public var height: Int
    /// `video_delay`: how many frames the decoder holds back for reordering.
    public var hasBFrames: Int
    /// As `av_guess_sample_aspect_ratio` has it (the stream's, else the codec's); nil when unknown.
    public var sampleAspectRatio: Rational?
    public var displayAspectRatio: Rational?
    public var pixelFormat: String?
    public var level: Int
    public var colorRange: String?
    public var colorSpace: String?
    public var colorTransfer: String?
    public var colorPrimaries: String?
    public var chromaLocation: String?
    /// `progressive`, `tt`, `bb`, `tb`, `bt`; nil when unknown.
    public var fieldOrder: String?
}

public struct AudioDetails: Sendable {
    public var sampleFormat: String?
    public var sampleRate: Int
    public var channels: Int
    /// nil when the channel order is unspecified.
    public var channelLayout: String?
    public var bitsPerSample: Int
}

/// Fields of the stream's decoder after `avcodec_open2` (which reads the extradata: an H.264
/// decoder knows the coded size and reference frames from the SPS), before any packet.
public struct DecoderDetails: Sendable {
    public var codedWidth: Int
    public var codedHeight: Int
    public var closedCaptions: Bool
    public var filmGrain: Bool
    public var refs: Int
    /// nil when 0.
    public var maxBitRate: Int64?
    public var bitsPerRawSample: Int?
    /// The decoder's exported private options (`is_avc`, `nal_length_size` for H.264), in order.
    public var exportedOptions: [(String, String)]
}

/// `AV_DISPOSITION_*` flags of a stream (those ffprobe 5.1 lists; its libavformat has one more,
/// `non_diegetic`, which ffprobe does not print).
public struct Disposition: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let `default` = Disposition(rawValue: 1 << 0)
    public static let dub = Disposition(rawValue: 1 << 1)
    public static let original = Disposition(rawValue: 1 << 2)
    public static let comment = Disposition(rawValue: 1 << 3)
    public static let lyrics = Disposition(rawValue: 1 << 4)
    public static let karaoke = Disposition(rawValue: 1 << 5)
    public static let forced = Disposition(rawValue: 1 << 6)
    public static let hearingImpaired = Disposition(rawValue: 1 << 7)
    public static let visualImpaired = Disposition(rawValue: 1 << 8)
    public static let cleanEffects = Disposition(rawValue: 1 << 9)
    public static let attachedPicture = Disposition(rawValue: 1 << 10)
    public static let timedThumbnails = Disposition(rawValue: 1 << 11)
    public static let captions = Disposition(rawValue: 1 << 16)
    public static let descriptions = Disposition(rawValue: 1 << 17)
    public static let metadata = Disposition(rawValue: 1 << 18)
    public static let dependent = Disposition(rawValue: 1 << 19)
    public static let stillImage = Disposition(rawValue: 1 << 20)
}

/// One piece of a stream's side data (`AVPacketSideData`), decoded for the types ffprobe shows.
public struct SideData: Sendable {
    /// FFmpeg's name for the type (`av_packet_side_data_name`), e.g. `Display Matrix`.
    public var typeName: String
    public var content: Content

    public enum Content: Sendable {
        /// The 3x3 matrix as stored (16.16 and 2.30 fixed point), and its rotation in degrees
        /// (counter-clockwise, as `av_display_rotation_get` gives it).
        case displayMatrix([Int32], rotation: Double)
        case stereo3D(type: String, inverted: Bool)
        case spherical(Spherical)
        case skipSamples(skip: UInt32, discardPadding: UInt32, skipReason: UInt8, discardReason: UInt8)
        /// Red, green, blue and white point as x, y pairs, when the primaries are known.
        case masteringDisplay(primaries: [Rational]?, luminance: (min: Rational, max: Rational)?)
        case contentLightLevel(maxContent: UInt32, maxAverage: UInt32)
        case doviConfiguration(DoviConfiguration)
        case audioServiceType(Int32)
        case mpegtsStreamID(UInt8)
        case cpbProperties(
            maxBitRate: Int64, minBitRate: Int64, averageBitRate: Int64, bufferSize: Int64, vbvDelay: UInt64)
        case activeFormat(UInt8)
        /// A type shown by its name only.
        case other
    }

    public struct Spherical: Sendable {
        public var projection: String
        public var padding: UInt32?
        /// Left, top, right, bottom, for tiled equirectangular projections.
        public var bounds: [Int]?
        /// Degrees.
        public var yaw: Double
        public var pitch: Double
        public var roll: Double
    }

    public struct DoviConfiguration: Sendable {
        public var versionMajor: UInt8
        public var versionMinor: UInt8
        public var profile: UInt8
        public var level: UInt8
        public var rpuPresent: UInt8
        public var elPresent: UInt8
        public var blPresent: UInt8
        public var blSignalCompatibilityID: UInt8
    }
}
