import Foundation
import MediaKit
import Reports
import Synchronization

/// `mprobe thumbs URL...`: key-frame thumbnails, a sprite sheet and a WebVTT storyboard.
enum ThumbsCommand: OptionCommand {
    static let name = "thumbs"
    static let summary = "thumbnails from key frames, a sprite sheet and a WebVTT storyboard"
    static let usageText = """
        Usage: mprobe thumbs URL... [--every S | --count N | --at T1,T2,...] [--width W] [--height H]
                                    [--format jpg|png|webp] [--quality Q] [--out DIR] [--sprite [COLSxROWS]]
                                    [--storyboard vtt,hls,dash] [--skip-black] [--accurate] [--json]
                                    [-j N] [-i FILE|-] [--quiet]
        """
    static let about = """
        For each time, the key frame at or before it is found in the demuxer's index; every byte
        range needed for all thumbnails is fetched in one parallel wave; then each key frame is
        decoded alone (no following frames), scaled to the display aspect (sample aspect ratio and
        rotation applied) and written as thumb-SSSSSS.mmm.jpg, with manifest.json. --json gives one
        object per input: the manifest, the notes and what it fetched.
        """
    static let options: [Option] = [
        Option("every", .value("S"), "one thumbnail every S seconds from 0"),
        Option("count", .value("N"), "N thumbnails spread evenly (default 20)"),
        Option("at", .value("LIST"), "at these times (seconds, comma separated); past the end: the last key frame"),
        Option("width", .value("W"), "width in pixels (default 320; height follows the aspect)"),
        Option("height", .value("H"), "height in pixels (with --width: fit inside W x H)"),
        Option("format", .value("F"), "jpg (default), png or webp"),
        Option("quality", .value("Q"), "1-100 (default 80)"),
        Option("out", .value("DIR"), "where to write (default ./thumbs); several inputs get a folder each"),
        // A next argument shaped like a grid (any case of x, so that 5X4 is an error about the grid,
        // not an input named 5X4) is the grid.
        Option(
            "sprite", .optionalValue("CxR", pattern: "^[0-9]+[xX][0-9]+$"),
            """
            also sprite sheets and thumbs.vtt: C x R thumbnails a sheet (default square-ish,
            one sheet when it fits); more go on sprite-2.jpg, ...; a sheet is at most
            65500 pixels a side and 8192x8192 pixels in all
            """),
        Option(
            "storyboard", .value("L"),
            """
            the storyboards beside the sheets, comma separated: vtt (thumbs.vtt, the
            default), hls (thumbs.m3u8, an #EXT-X-IMAGES-ONLY playlist, and
            thumbs-master.m3u8 with the #EXT-X-IMAGE-STREAM-INF line for your master),
            dash (thumbs-adaptationset.xml, a DASH-IF thumbnail AdaptationSet over
            sprite-1.jpg, sprite-2.jpg, ...). hls and dash need --every or --count, make
            sheets without --sprite (10x10 tiles) and keep every sheet the same grid,
            at most 4096 pixels a side (what TV players decode)
            """),
        Option(
            "skip-black",
            """
            a key frame that is nearly black or flat gives way to the next one (up
            to 4 key frames, 10 s, on); the manifest says the time it replaced
            """),
        Option("accurate", "decode from the key frame up to the exact time (fetches more)"),
        Option("jobs", short: "j", .value("N"), "inputs at once (default 4)"),
        Option("i", .value("FILE"), "inputs from FILE, one per line ('-' for stdin)"),
        Option("quiet", "no progress bar"),
    ]

    static func run(_ args: Arguments) throws -> ExitCode {
        let options = try GlobalOptions(args)
        let inputs = try InputList(operands: args.positionals, listFile: args.value("i"))
        var thumbnailer = Thumbnailer()
        thumbnailer.options = try thumbnailOptions(args)
        let out = args.value("out") ?? "thumbs"
        guard !out.isEmpty else { throw UsageError("--out needs a folder") }
        try OutputFolder(out).checkWritable()  // before any fetch: a typo in --out costs nothing
        var folders = FolderNamer()
        let session = try options.session()
        let bar = ProgressBar(quiet: args.flag("quiet") || options.json)
        let progress = ThumbsProgress()
        let maker = thumbnailer
        var failures = BatchFailures(json: options.json, urlRules: try options.urlRules())
        // One input given as an operand writes to --out itself; a list gets a folder per input.
        let single = inputs.isSingleOperand
        let next = { inputs.next().map { input in (input, single ? out : out + "/" + folders.name(for: input)) } }
        let count = Batch.run(
            next: next, jobs: try jobsOption(args),
            work: { _, item in
                let (input, dir) = item
                return Result { () throws -> (ThumbnailSet, String) in
                    @Sendable func show() {
                        let (thumbnails, done) = progress.counts
                        bar.update(text: "\(done) inputs done, \(thumbnails) thumbnails")
                    }
                    defer { progress.inputDone(); show() }
                    let set = try maker.make(input, session: session) { _ in
                        progress.thumbnailDone()
                        show()
                    }
                    try ThumbnailReport.write(set, to: dir)
                    return (set, dir)
                }
            },
            emit: { _, item, result in
                let input = item.0
                switch result {
                case .success(let (set, dir)):
                    bar.finish()
                    if !options.json { for note in set.notes { Console.warning("\(input): \(note)") } }
                    Console.out(
                        options.json ? ThumbnailReport.json(set, dir: dir).text : ThumbsOutput.human(set, dir: dir))
                case .failure(let error):
                    bar.finish()
                    failures.report(input: input, error: error)
                }
            })
        guard count > 0 else { throw UsageError("thumbs needs at least one URL or path") }
        return failures.exitCode(inputs: count)
    }

    static func thumbnailOptions(_ args: Arguments) throws -> ThumbnailOptions {
        var request = ThumbnailOptions.Request()
        request.every = try args.double("every")
        request.count = try args.integer("count")
        if let text = args.value("at") {
            let times = text.split(separator: ",").map { parseDecimal($0.trimmingCharacters(in: .whitespaces)) }
            guard !times.isEmpty, times.allSatisfy({ $0 != nil }) else {
                throw UsageError("--at needs seconds separated by commas, e.g. 0,30,60.5; got '\(text)'")
            }
            request.at = times.compactMap { $0 }
        }
        request.width = try args.integer("width")
        request.height = try args.integer("height")
        request.format = args.value("format")
        request.quality = try args.integer("quality")
        request.accurate = args.flag("accurate")
        if args.flag("sprite") { request.sprite = args.value("sprite") ?? "" }
        request.storyboard = args.value("storyboard")
        request.skipBlack = args.flag("skip-black")
        // Checked here, before any fetch: a sheet too large to hold or to encode is a usage error.
        return try usage { try ThumbnailOptions(validating: request) }
    }

}

/// A folder per input, from its file name, made unique in input order.
struct FolderNamer {
    private var seen: [String: Int] = [:]

    mutating func name(for input: String) -> String {
        let path = input.split(separator: "?").first.map(String.init) ?? input
        var base = (path.split(separator: "/").last.map(String.init) ?? "input")
        if let dot = base.lastIndex(of: "."), dot != base.startIndex { base = String(base[..<dot]) }
        base = String(base.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
        if base.isEmpty { base = "input" }
        let n = seen[base, default: 0] + 1
        seen[base] = n
        return n == 1 ? base : "\(base)-\(n)"
    }
}

/// Counters for the progress bar, shared by the worker threads.
final class ThumbsProgress: Sendable {
    private let thumbnails = Atomic<Int>(0)
    private let inputs = Atomic<Int>(0)

    func thumbnailDone() { _ = thumbnails.wrappingAdd(1, ordering: .relaxed) }
    func inputDone() { _ = inputs.wrappingAdd(1, ordering: .relaxed) }
    /// Thumbnails made and inputs finished so far.
    var counts: (Int, Int) { (thumbnails.load(ordering: .relaxed), inputs.load(ordering: .relaxed)) }
}
