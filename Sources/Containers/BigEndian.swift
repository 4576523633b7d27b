/// Unsigned big-endian integers: the byte order of every container read here (ISO-BMFF boxes,
/// EBML, MPEG audio and TS headers).
package enum BigEndian {
    /// `bytes` as one unsigned integer, the first byte most significant: at most 8 bytes, or with
    /// `bitsPerByte` 7 (an ID3 tag's "syncsafe" sizes, whose bytes keep their top bit clear), 9.
    package static func uint(_ bytes: some Collection<UInt8>, bitsPerByte: UInt64 = 8) -> UInt64 {
        bytes.reduce(UInt64(0)) { $0 << bitsPerByte | UInt64($1) }
    }
}
