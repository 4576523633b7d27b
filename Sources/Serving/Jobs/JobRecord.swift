import Foundation
import Reports

public enum JobState: String, Sendable, CaseIterable {
    case queued, running, done, failed, cancelled

    var isFinal: Bool { self == .done || self == .failed || self == .cancelled }
}

public enum JobType: String, Sendable {
    case prefetch, thumbnails
}

/// How far a job has come: bytes fetched of what its plans need, and inputs done.
public struct JobProgress: Sendable, Equatable {
    public var bytes: Int64 = 0
    public var totalBytes: Int64 = 0
    public var itemsDone = 0
    public var items = 0

    public init() {}
}

/// One job as the store keeps it and the API shows it.
public struct JobRecord: Sendable {
    public let id: String
    public let type: JobType
    /// The request, as validated JSON text: what a restarted service runs again.
    public let spec: String
    public var state: JobState
    public var progress: JobProgress
    /// The result object (JSON text) of a finished job.
    public var result: String?
    public var errorCode: String?
    public var errorMessage: String?
    public var created: Date
    public var started: Date?
    public var finished: Date?
    /// Its place in the order of submission (the store's; 0 before it is stored): pages of a
    /// listing continue from it.
    public var seq: Int64 = 0
    /// Runs started, counting one that is running: more than 1 when a worker was lost (or the
    /// service stopped) while it ran.
    public var attempts = 0
    /// The node (`JobLease.process`) whose workers run it while that node is alive: the node that
    /// accepted it for one URL (the front sends that URL's players there), or the one that alone
    /// knows its URLs' secrets. Not shown.
    public var node: String?

    /// `{"id", "type", "state", "progress", "attempts", "result", "error", "created", "started",
    /// "finished", "request"}`, times in ISO 8601; `request` is the body the job was submitted with.
    var json: JSON {
        let result: JSON = self.result.map { .verbatim($0) } ?? .null
        let error: JSON =
            errorCode.map { .object([("code", .string($0)), ("message", .string(errorMessage ?? ""))]) } ?? .null
        return .object([
            ("id", .string(id)), ("type", .string(type.rawValue)), ("state", .string(state.rawValue)),
            (
                "progress",
                .object([
                    ("bytes", .int(progress.bytes)), ("total_bytes", .int(progress.totalBytes)),
                    ("items_done", .int(progress.itemsDone)), ("items", .int(progress.items)),
                ])
            ),
            ("attempts", .int(Int64(attempts))), ("result", result), ("error", error),
            ("created", .string(JobRecord.iso(created))),
            ("started", started.map { .string(JobRecord.iso($0)) } ?? .null),
            ("finished", finished.map { .string(JobRecord.iso($0)) } ?? .null),
            // Validated JSON when it was stored: what a client (the dashboard) shows of a job not yet done.
            ("request", .verbatim(spec)),
        ])
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
