import ByteSources

/// What the sample tables of an MP4's tracks claim, checked against the room their boxes have —
/// to say what is wrong with a file when libavformat only says "Cannot allocate memory" (it tried
/// to allocate a table of the claimed size) or "Invalid data found".
///
/// Bounded and local: it reads box headers and a few fields of bytes already fetched (never
/// fetches more), at most `LocalBoxReader.maxBoxes` boxes. The checks follow libavformat's: an entry
/// count must fit its box; the sample-to-chunk table must not point past the last chunk; a track
/// cannot have more key frames than samples.
package struct SampleTables {

    /// What is wrong, per track (the trak's position in the moov, as libavformat numbers streams).
    private(set) var problems: [(track: Int, text: String)] = []

    package init(moov: BoxHeader, source: any MediaSource) {
        var reader = LocalBoxReader(source: source)
        let traks = reader.children(of: moov.offset + Int64(moov.headerSize)..<moov.end).filter {
            $0.box.type == "trak"
        }
        for (track, trak) in traks.enumerated() {
            var tables = Tables()
            tables.collect(in: trak.body, reader: &reader, depth: 0)
            problems += tables.problems(track: track).map { (track, $0) }
        }
    }

    /// The first problem of `track`, or of any track when nil.
    package func problem(track: Int? = nil) -> String? {
        problems.first { track == nil || $0.track == track }?.text
    }
}

/// The counts one track's tables state, and the room their boxes have for them.
private struct Tables {
    /// Per table type: the entry count it states and the entries its box has room for.
    var counts: [String: (claimed: Int64, room: Int64)] = [:]
    /// The first chunk of the last sample-to-chunk run.
    var lastFirstChunk: Int64?

    /// Entry sizes of the tables whose body is: version and flags, a 32-bit count, the entries.
    static let simple: [String: Int64] = ["stts": 8, "ctts": 8, "stss": 4, "stsc": 12, "stco": 4, "co64": 8]
    static let containers: Set<String> = ["mdia", "minf", "stbl", "edts"]
    static let what = [
        "stts": "entries", "ctts": "entries", "stss": "key frames", "stsc": "entries",
        "stco": "chunks", "co64": "chunks", "stsz": "samples", "stz2": "samples", "elst": "edits",
    ]

    /// `depth` below the trak: the tables sit at most three containers down (mdia, minf, stbl), and
    /// a file nesting containers deeper must not take the stack with it.
    mutating func collect(in range: Range<Int64>, reader: inout LocalBoxReader, depth: Int) {
        for (box, body) in reader.children(of: range) {
            if Tables.containers.contains(box.type) {
                if depth < 3 { collect(in: body, reader: &reader, depth: depth + 1) }
                continue
            }
            // Version and flags, then a count (stsz, stz2: a sample size or field size first).
            let needed = box.type == "stsz" || box.type == "stz2" ? 12 : 8
            guard body.count >= needed, let head = reader.bytes(at: body.lowerBound, count: needed) else { continue }
            func u32(_ at: Int) -> Int64 { Int64(BigEndian.uint(head[at..<at + 4])) }
            let size = Int64(body.count)
            switch box.type {
            case let type where Tables.simple[type] != nil:
                let entry = Tables.simple[type] ?? 1
                counts[type] = (u32(4), max(0, size - 8) / entry)
                if type == "stsc", u32(4) > 0, u32(4) <= max(0, size - 8) / entry,
                    let last = reader.bytes(at: body.lowerBound + 8 + (u32(4) - 1) * entry, count: 4)
                {
                    lastFirstChunk = Int64(BigEndian.uint(last))
                }
            case "elst":
                counts["elst"] = (u32(4), max(0, size - 8) / (head[0] == 1 ? 20 : 12))
            case "stsz":
                // One sample size for all samples leaves no table: any count fits.
                counts["stsz"] = (u32(8), u32(4) != 0 ? u32(8) : max(0, size - 12) / 4)
            case "stz2":
                let bits = Int64(head[7])
                counts["stz2"] = (u32(8), [4, 8, 16].contains(bits) ? max(0, size - 12) * 8 / bits : 0)
            default:
                break
            }
        }
    }

    /// Sentences naming the table and `track`.
    func problems(track: Int) -> [String] {
        var found: [String] = []
        for type in ["stsz", "stz2", "stco", "co64", "stsc", "stts", "ctts", "stss", "elst"] {
            guard let (claimed, room) = counts[type], claimed > room else { continue }
            found.append(
                "the \(type) box of track \(track) claims \(claimed) \(Tables.what[type] ?? "entries") but holds room for \(room)"
            )
        }
        let chunks = (counts["stco"] ?? counts["co64"])?.claimed
        if let chunks, let lastFirstChunk, lastFirstChunk > chunks {
            found.append(
                "the stsc box of track \(track) starts a run at chunk \(lastFirstChunk) but the "
                    + "\(counts["stco"] != nil ? "stco" : "co64") box holds \(chunks) chunk\(chunks == 1 ? "" : "s")")
        }
        let samples = (counts["stsz"] ?? counts["stz2"])?.claimed
        if let samples, let keys = counts["stss"]?.claimed, keys > samples {
            found.append("the stss box of track \(track) lists \(keys) key frames but the track has \(samples) samples")
        }
        return found
    }
}
