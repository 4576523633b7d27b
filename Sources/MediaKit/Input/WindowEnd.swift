import FFmpeg
import Support

/// Where each track's window ends as `check` reads it: at the first packet whose decode time,
/// plus the stream's decode delay (as the planner counts it), reaches the end. `check` and a
/// prefetch's reading of its window (`PrefetchPlanner.readAsAPlayer`) share it, so a prefetch
/// reads what a check will.
struct WindowEnd {
    let seconds: Double
    private let delays: [Int: Int64]

    init(_ seconds: Double, streams: [Int], in context: FormatContext) {
        self.seconds = seconds
        delays = Dictionary(uniqueKeysWithValues: streams.map { ($0, context.decodeDelay(stream: $0)) })
    }

    /// Whether `packet` is its track's first past the window.
    func reached(by packet: Packet, in context: FormatContext) -> Bool {
        let index = packet.streamIndex
        guard let ts = packet.dts.map({ $0.saturatingAdd(delays[index, default: 0]) }) ?? packet.pts else {
            return false
        }
        return context.seconds(ts, stream: index) >= seconds
    }
}
