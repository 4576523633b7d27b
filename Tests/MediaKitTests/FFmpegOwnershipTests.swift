import Foundation
import XCTest

/// The project's rule for C resources: each has one owner type, and code above the owners never
/// sees a raw FFmpeg pointer. Checked on the sources themselves, so a new call in the wrong place
/// fails here rather than in review.
final class FFmpegOwnershipTests: XCTestCase {
    static let mediaKit = MediaFixtures.repoRoot.appendingPathComponent("Sources/MediaKit").path

    func source(_ file: String) throws -> String {
        try String(contentsOfFile: Self.mediaKit + "/" + file, encoding: .utf8)
    }

    func testDemuxCodecAndFrameCallsStayInTheirOwnerTypes() throws {
        let owners: [(calls: [String], files: Set<String>)] = [
            (["av_read_frame(", "av_seek_frame(", "avformat_seek_file(", "avformat_open_input(", "avformat_close_input("],
             ["FormatContext.swift", "FormatContext+Demux.swift"]),
            (["avcodec_alloc_context3(", "avcodec_free_context(", "avcodec_open2(", "avcodec_send_packet(",
              "avcodec_receive_frame(", "avcodec_flush_buffers("], ["Decoder.swift", "Encoder.swift"]),
            (["avcodec_send_frame(", "avcodec_receive_packet("], ["Encoder.swift"]),
            (["av_frame_ref(", "av_frame_unref(", "av_frame_alloc(", "av_frame_get_buffer(", "av_packet_alloc(",
              "av_packet_unref("], ["Packet.swift"]),
            (["sws_getContext(", "sws_scale(", "sws_freeContext("], ["Scaler.swift"]),
        ]
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.mediaKit).filter { $0.hasSuffix(".swift") }
        for file in files {
            let text = try source(file)
            for owner in owners where !owner.files.contains(file) {
                for call in owner.calls where text.contains(call) {
                    XCTFail("\(file) calls \(call)…): that belongs in \(owner.files.sorted().joined(separator: " or "))")
                }
            }
        }
    }

    func testJobsAboveTheOwnersSeeNoRawPointers() throws {
        for file in ["Checker.swift", "Thumbnailer.swift", "ImageEncoder.swift", "Prober.swift", "PrefetchPlanner.swift",
                     "SpriteSheets.swift", "Storyboard.swift"] {
            guard let text = try? source(file) else { continue }
            for raw in [".pointee", ".pointer", "UnsafeMutablePointer<AV", "UnsafePointer<AV"] where text.contains(raw) {
                XCTFail("\(file) uses \(raw): go through the owner type's methods")
            }
        }
    }
}
