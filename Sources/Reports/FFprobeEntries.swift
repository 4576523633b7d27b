import ByteSources
import Foundation
import MediaKit

/// Which sections and keys an ffprobe-compatible report shows, set the way ffprobe 5.1 sets them
/// from `-show_format`, `-show_streams` and `-show_entries`, in the order given (a later option
/// can narrow what an earlier one widened).
///
/// ffprobe's rules, followed here: each section shows all its keys or a set of them; a section
/// is printed when it or a section below it shows anything; `-show_entries` matches a section by
/// its name or its unique name, so `stream=codec_name` also names the streams inside programs
/// (and ffprobe then prints `programs`), and `tags` names the tags of every section.
public struct FFprobeEntries: Sendable {
    /// The sections an mprobe report can print. (ffprobe's others — frames, packets, chapters,
    /// versions... — are only names here, to refuse them.)
    enum Section: CaseIterable {
        case format, formatTags, programs, program, programTags, programStreams, programStream
        case programStreamDisposition, programStreamTags, streams, stream, streamDisposition, streamTags
        case streamSideDataList, streamSideData

        var name: String {
            switch self {
            case .format: return "format"
            case .formatTags, .programTags, .programStreamTags, .streamTags: return "tags"
            case .programs: return "programs"
            case .program: return "program"
            case .programStreams, .streams: return "streams"
            case .programStream, .stream: return "stream"
            case .programStreamDisposition, .streamDisposition: return "disposition"
            case .streamSideDataList: return "side_data_list"
            case .streamSideData: return "side_data"
            }
        }

        var uniqueName: String? {
            switch self {
            case .formatTags: return "format_tags"
            case .programTags: return "program_tags"
            case .programStreams: return "program_streams"
            case .programStream: return "program_stream"
            case .programStreamDisposition: return "program_stream_disposition"
            case .programStreamTags: return "program_stream_tags"
            case .streamDisposition: return "stream_disposition"
            case .streamTags: return "stream_tags"
            case .streamSideDataList: return "stream_side_data_list"
            case .streamSideData: return "stream_side_data"
            default: return nil
            }
        }

        var children: [Section] {
            switch self {
            case .format: return [.formatTags]
            case .programs: return [.program]
            case .program: return [.programTags, .programStreams]
            case .programStreams: return [.programStream]
            case .programStream: return [.programStreamDisposition, .programStreamTags]
            case .streams: return [.stream]
            case .stream: return [.streamDisposition, .streamTags, .streamSideDataList]
            case .streamSideDataList: return [.streamSideData]
            default: return []
            }
        }
    }

    /// Names (and unique names) of ffprobe's sections that need what mprobe does not do: read
    /// packets or frames, list chapters, show errors as output, or describe ffprobe itself.
    private static let unsupportedNames: Set<String> = [
        "chapters", "chapter", "chapter_tags", "error", "frames", "frame", "frame_tags", "frame_side_data_list",
        "frame_side_data", "timecodes", "timecode", "components", "component", "pieces", "section", "logs", "log",
        "library_versions", "library_version", "packets", "packets_and_frames", "packet", "packet_tags",
        "packet_side_data_list", "packet_side_data", "pixel_formats", "pixel_format", "flags", "pixel_format_flags",
        "pixel_format_components", "program_version", "subtitle", "tags", "side_data", "side_data_list",
    ]

    private var showsAll: Set<Section> = []
    private var entries: [Section: Set<String>] = [:]

    /// Nothing shown, as ffprobe without `-show_*` options.
    public init() {}

    /// `-show_format -show_streams`.
    public static var formatAndStreams: FFprobeEntries {
        var entries = FFprobeEntries()
        entries.showStreams()
        entries.showFormat()
        return entries
    }

    /// `-show_format`: the format section and its tags, every key.
    public mutating func showFormat() { mark(.format, all: true, entries: []) }

    /// `-show_streams`: each stream with its disposition, tags and side data, every key.
    public mutating func showStreams() { mark(.streams, all: true, entries: []) }

    /// `-show_entries SECTION[=KEY[,KEY...]][:SECTION...]`, e.g. `format=duration:stream=codec_name,width`.
    /// A section without `=` shows all its keys and sections.
    public mutating func showEntries(_ spec: String) throws {
        for part in spec.split(separator: ":", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = pieces[0].trimmingCharacters(in: .whitespaces)
            let keys =
                pieces.count > 1
                ? Set(
                    pieces[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                        !$0.isEmpty
                    }) : nil
            if FFprobeEntries.unsupportedNames.contains(name) {
                let hint =
                    ["tags", "side_data", "side_data_list"].contains(name)
                    ? "; name the section's own, such as stream_\(name) or format_tags" : ""
                throw InvalidOption(
                    "show_entries",
                    "\(name): ffprobe would print chapters, frames or packets for it, "
                        + "which mprobe does not read\(hint)")
            }
            let matched = Section.allCases.filter { $0.name == name || $0.uniqueName == name }
            guard !matched.isEmpty else { throw InvalidOption("show_entries", "\(name): no such section") }
            for section in matched { mark(section, all: keys == nil, entries: keys ?? []) }
        }
    }

    /// As ffprobe marks a section: all keys also marks every section below; a list of keys is added
    /// to the section's list (and leaves a wider earlier choice off).
    private mutating func mark(_ section: Section, all: Bool, entries keys: Set<String>) {
        if all {
            showsAll.insert(section)
            for child in section.children { mark(child, all: true, entries: []) }
        } else {
            showsAll.remove(section)
            if !keys.isEmpty { entries[section, default: []].formUnion(keys) }
        }
    }

    /// Whether `section` or a section below it shows anything: then ffprobe prints it.
    func isShown(_ section: Section) -> Bool {
        showsAll.contains(section) || entries[section] != nil || section.children.contains(where: isShown)
    }

    /// Whether `key` is printed in `section`.
    func shows(_ key: String, in section: Section) -> Bool {
        showsAll.contains(section) || entries[section]?.contains(key) == true
    }
}
