extension Int64 {
    /// `self + other` for `other` ≥ 0, or `Int64.max` where that would overflow: offsets and
    /// times read from damaged files can sit anywhere, and must not trap.
    public func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
