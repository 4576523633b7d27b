import Foundation
import Synchronization

/// The real ffprobe (Debian's, on the same FFmpeg 5.1 libraries mprobe links), the oracle of the
/// ffprobe-compatible output. Each command line runs once per test run; its result is kept.
public enum FFprobeOracle {
    public static let executablePath = "/usr/bin/ffprobe"

    /// The options every comparison of a whole report uses.
    public static let formatAndStreams = ["-v", "error", "-of", "json", "-show_format", "-show_streams"]

    private static let results = Mutex<[[String]: ProcessResult]>([:])

    /// ffprobe's result for `arguments` (the input among them), from this run's earlier call if any.
    public static func run(_ arguments: [String]) throws -> ProcessResult {
        if let known = results.withLock({ $0[arguments] }) { return known }
        guard FileManager.default.isExecutableFile(atPath: executablePath) else {
            throw TestSupportError.missingExecutable(
                path: executablePath, hint: "install Debian's ffmpeg (apt-get install ffmpeg)")
        }
        let result = try runProcess(executablePath, arguments, timeout: 120)
        results.withLock { $0[arguments] = result }
        return result
    }

    /// Runs ffprobe for every input, six at a time, so the comparisons that follow find their
    /// results ready (one ffprobe spends most of its time starting and loading its libraries, not
    /// on a core, so more run at once than there are cores).
    public static func prepare(_ arguments: [String], inputs: [String]) {
        let slots = DispatchSemaphore(value: 6)
        let group = DispatchGroup()
        for input in inputs {
            slots.wait()
            DispatchQueue.global().async(group: group) {
                defer { slots.signal() }
                _ = try? run(arguments + [input])
            }
        }
        group.wait()
    }

    /// Where mprobe may differ from ffprobe for `input`, and why: paths as
    /// `OrderedJSON.differences` names them.
    ///
    /// No key needs more than what both read (`avformat_find_stream_info`, and a decoder opened
    /// but never fed): mprobe and ffprobe run the same library code on the same bytes, so every
    /// key of every file is compared, except where libavformat itself is not deterministic.
    public static func knownDifferences(for input: String) -> Set<String> {
        // libavformat 5.1 takes the sample offset and size of this AVIF (its iloc box is cut
        // short) from memory it allocated and never filled (mov_read_iloc), so whether a packet
        // can be read, and the start time it gives, depend on what the heap held: two runs of
        // ffprobe itself differ in the offset they try.
        if input.hasSuffix("mp4parse-rust__bug-1655846.avif") {
            return ["streams[0].start_pts", "streams[0].start_time", "format.start_time"]
        }
        return []
    }

    /// The differences between ffprobe's JSON and mprobe's for `input`, the known ones left out.
    public static func differences(ffprobe expected: [UInt8], mprobe actual: [UInt8], input: String) throws -> [String]
    {
        let known = knownDifferences(for: input)
        return try OrderedJSON(parsing: expected).differences(
            from: OrderedJSON(parsing: actual), ignore: known.contains)
    }
}
