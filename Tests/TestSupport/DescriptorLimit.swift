import Foundation

/// Raises this process's soft limit on open files to `wanted` (and the hard one too, where the
/// process may), for tests that hold thousands of connections; returns the soft limit now in force.
@discardableResult
public func raiseDescriptorLimit(to wanted: rlim_t) -> rlim_t {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < wanted {
        var raised = rlimit(rlim_cur: wanted, rlim_max: max(wanted, limit.rlim_max))
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 {
            raised = rlimit(rlim_cur: min(wanted, limit.rlim_max), rlim_max: limit.rlim_max)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return limit.rlim_cur
}
