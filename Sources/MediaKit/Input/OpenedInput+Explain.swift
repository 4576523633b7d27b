import ByteSources
import Containers
import FFmpeg
import Foundation

extension OpenedInput {
    /// An error met while reading or seeking the opened input, said as what is wrong with the file:
    /// an MP4's sample tables where they tell (`SampleTables`, from bytes already local), else the
    /// index libavformat built. Errors that already say what happened (network, offline,
    /// cancellation, media errors) pass through.
    func explain(_ error: Error, track: Int? = nil, seconds: Double? = nil) -> Error {
        guard let error = error as? FFmpegError else { return error }
        let tables = tableProblem(track: track)
        guard error.function == "av_seek_frame" || error.function == "avformat_seek_file", let seconds else {
            return MediaError.malformed(input: source.input, detail: tables ?? error.description)
        }
        let place =
            track.map { String(format: "cannot seek track %d to %.3f s", $0, seconds) }
            ?? String(format: "cannot seek to %.3f s", seconds)
        return MediaError.malformed(
            input: source.input, detail: place + ": " + (tables ?? indexProblem(track) ?? error.description))
    }

    /// What is wrong with the sample tables of `track` (of any track when nil), for an MP4.
    func tableProblem(track: Int?) -> String? {
        layout?.moov.flatMap { SampleTables(moov: $0, source: source).problem(track: track) }
    }

    /// Why libavformat's index cannot serve a seek on `track` of a plain MP4, if it shows. (Other
    /// containers, fragmented MP4 included, may have no index until they are read.)
    private func indexProblem(_ track: Int?) -> String? {
        guard let track, let layout, layout.moov != nil, !layout.fragmented else { return nil }
        let entries = context.indexEntries(stream: track)
        if entries.isEmpty { return "track \(track) has no sample index (its sample tables are missing or unusable)" }
        if !entries.contains(where: \.isKeyframe) { return "no key frame index for track \(track)" }
        return nil
    }
}
