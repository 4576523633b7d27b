/// Why the service could not start or run, in words an operator can act on.
public enum ServiceError: Error, CustomStringConvertible, Equatable {
    case listen(address: String, reason: String)
    case configuration(String)

    public var description: String {
        switch self {
        case .listen(let address, let reason): return "cannot listen on \(address): \(reason)"
        case .configuration(let detail): return detail
        }
    }
}
