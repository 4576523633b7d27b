import CPostgres
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// libpq's functions: `pq.PQexec(...)`, from a table filled on first use (CPostgres.h: the binary
/// is not linked against libpq, so nothing but `--jobs postgres://` needs it installed).
enum LibPQ {
    static let loading: Result<mp_pq, PostgresError> = {
        var why = [CChar](repeating: 0, count: 512)
        guard let table = mp_pq_load(&why, why.count) else {
            let bytes = why.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
            return .failure(
                PostgresError(
                    message: "PostgreSQL's client library could not be loaded: "
                        + String(decoding: bytes, as: UTF8.self),
                    state: nil))
        }
        return .success(table.pointee)
    }()
}

/// A failure of PostgreSQL or of reaching it: libpq's message and, when the server answered,
/// its SQLSTATE.
public struct PostgresError: Error, CustomStringConvertible {
    public let message: String
    /// The five-character SQLSTATE (`40001`, `57P01`), nil when the server was not reached.
    public let state: String?
    public var description: String { message }
}

/// One connection to PostgreSQL. The single owner of the `PGconn*`, finished in `deinit`.
/// Not thread-safe: its owner (`PostgresPool`, `JobListener`) gives it to one thread at a time.
final class PostgresConnection {
    private let pq: mp_pq
    private let handle: OpaquePointer

    /// Connects to `url` (a libpq URI or `key=value` string). Gives up after 5 seconds unless the
    /// URL says otherwise. Messages never include the URL (it may hold a password).
    init(url: String) throws {
        let pq = try LibPQ.loading.get()
        self.pq = pq
        // Later parameters override earlier ones: the URL's own settings win over these defaults.
        // A statement waits 10 s at most (a table locked by someone else: the API answers 503,
        // it does not hang), and the server's notices ("already exists") are not printed.
        let keywords = ["connect_timeout", "application_name", "options", "dbname"]
        let values = ["5", "mprobe", "-c statement_timeout=10000 -c client_min_messages=warning", url]
        let connection = withCStrings(keywords) { k in withCStrings(values) { v in pq.PQconnectdbParams(k, v, 1) } }
        guard let connection else { throw PostgresError(message: "out of memory connecting to PostgreSQL", state: nil) }
        guard pq.PQstatus(connection) == CONNECTION_OK else {
            // libpq may quote what it could not parse, a password among it.
            let message = PostgresJobStore.secrets(in: url).reduce(
                PostgresConnection.text(pq.PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            ) { $0.replacingOccurrences(of: $1, with: "***") }
            pq.PQfinish(connection)
            throw PostgresError(message: "cannot connect to PostgreSQL: \(message)", state: nil)
        }
        handle = connection
    }

    deinit { pq.PQfinish(handle) }

    private static func text(_ chars: UnsafeMutablePointer<CChar>?) -> String {
        chars.map { String(cString: $0) } ?? ""
    }

    /// The connection is still usable: false once the server went away (a restart, a network cut).
    var isOpen: Bool { pq.PQstatus(handle) == CONNECTION_OK }

    /// Runs one statement with text parameters (nil for NULL); returns its rows, each column as
    /// text or nil for NULL.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        // libpq ends a text parameter at a NUL: it would stand for a shorter value.
        guard !parameters.contains(where: { $0?.utf8.contains(0) == true }) else {
            throw PostgresError(message: "PostgreSQL: a value holds a NUL byte, which text cannot", state: "22021")
        }
        let result = withOptionalCStrings(parameters) { values in
            pq.PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        return try rows(of: result)
    }

    /// Runs one or more statements without parameters (schema changes, LISTEN); returns the last
    /// one's rows.
    @discardableResult
    func execute(_ sql: String) throws -> [[String?]] {
        try rows(of: pq.PQexec(handle, sql))
    }

    private func rows(of result: OpaquePointer?) throws -> [[String?]] {
        guard let result else { throw failure(nil) }
        defer { pq.PQclear(result) }
        let status = pq.PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw failure(result) }
        let count = pq.PQntuples(result), fields = pq.PQnfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(count))
        for r in 0..<count {
            rows.append(
                (0..<fields).map { f in
                    pq.PQgetisnull(result, r, f) != 0 ? nil : PostgresConnection.text(pq.PQgetvalue(result, r, f))
                })
        }
        return rows
    }

    private func failure(_ result: OpaquePointer?) -> PostgresError {
        let text = result.map { pq.PQresultErrorMessage($0) } ?? pq.PQerrorMessage(handle)
        let state = result.flatMap { pq.PQresultErrorField($0, mp_pq_diag_sqlstate()) }.map { String(cString: $0) }
        let message = PostgresConnection.text(text).trimmingCharacters(in: .whitespacesAndNewlines)
        return PostgresError(
            message: "PostgreSQL: " + (message.isEmpty ? "the connection was lost" : message), state: state)
    }

    // MARK: Notifications

    /// The socket to wait on for notifications.
    var socket: Int32 { pq.PQsocket(handle) }

    /// Reads what the server sent and returns the notifications among it: (channel, payload).
    /// Throws when the connection is lost.
    func notifications() throws -> [(channel: String, payload: String)] {
        guard pq.PQconsumeInput(handle) == 1 else { throw failure(nil) }
        var found: [(String, String)] = []
        while let note = pq.PQnotifies(handle) {
            found.append((String(cString: note.pointee.relname), String(cString: note.pointee.extra)))
            pq.PQfreemem(note)
        }
        return found
    }
}

extension [[String?]] {
    /// The first column of the first row, nil when there is none or it is NULL.
    var firstValue: String? { first?.first ?? nil }
}

/// Runs `body` with the strings as a C array of C strings, valid only during the call.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    withOptionalCStrings(strings.map { Optional($0) }) { body($0!) }
}

private func withOptionalCStrings<R>(
    _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
) -> R {
    let copies = strings.map { $0.map { strdup($0) } ?? nil }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}
