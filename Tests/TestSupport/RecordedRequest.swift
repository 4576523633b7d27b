/// A request as `FaultServer` received it, recorded before it was answered.
public struct RecordedRequest: Sendable, Equatable {
    /// The n-th connection the server accepted, 1-based: equal numbers mean a reused connection.
    public let connection: Int
    public let method: String
    /// The request target as sent, query string included.
    public let path: String
    /// Header names lowercased; repeated headers joined with ", ".
    public let headers: [String: String]

    /// The `Range` header, if any.
    public var range: String? { headers["range"] }

    public init(connection: Int, method: String, path: String, headers: [String: String]) {
        self.connection = connection
        self.method = method
        self.path = path
        self.headers = headers
    }
}
