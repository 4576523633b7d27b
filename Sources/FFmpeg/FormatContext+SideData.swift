import CFFmpeg

/// A stream's side data (display matrix, HDR metadata, Dolby Vision configuration...), decoded for
/// the types ffprobe shows; the others keep only their name.
extension FormatContext {
    func sideData(_ st: UnsafeMutablePointer<AVStream>) -> [SideData] {
        guard let list = st.pointee.side_data else { return [] }
        let par = st.pointee.codecpar.pointee
        return (0..<Int(max(0, st.pointee.nb_side_data))).map { i in
            let sd = list[i]
            let name = ff.av_packet_side_data_name(sd.type).map { String(cString: $0) } ?? "unknown"
            let bytes = UnsafeRawBufferPointer(start: sd.data, count: sd.data == nil ? 0 : Int(sd.size))
            return SideData(
                typeName: name, content: FormatContext.content(sd.type, bytes, width: par.width, height: par.height))
        }
    }

    /// The fields of one piece, for the types and under the size conditions ffprobe decodes; a
    /// piece too small for its structure is shown by name only rather than read past its end.
    private static func content(
        _ type: AVPacketSideDataType, _ bytes: UnsafeRawBufferPointer,
        width: Int32, height: Int32
    ) -> SideData.Content {
        func value<T>(_: T.Type) -> T? {
            bytes.count >= MemoryLayout<T>.size ? bytes.loadUnaligned(as: T.self) : nil
        }
        switch type {
        case AV_PKT_DATA_DISPLAYMATRIX where bytes.count >= 9 * 4:
            let matrix = (0..<9).map { bytes.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self) }
            let rotation = matrix.withUnsafeBufferPointer { ff.av_display_rotation_get($0.baseAddress) }
            return .displayMatrix(matrix, rotation: rotation)
        case AV_PKT_DATA_STEREO3D:
            guard let stereo = value(AVStereo3D.self) else { return .other }
            return .stereo3D(
                type: ff.av_stereo3d_type_name(stereo.type.rawValue).map { String(cString: $0) } ?? "unknown",
                inverted: stereo.flags & AV_STEREO3D_FLAG_INVERT != 0)
        case AV_PKT_DATA_SPHERICAL:
            guard var map = value(AVSphericalMapping.self) else { return .other }
            var spherical = SideData.Spherical(
                projection: ff.av_spherical_projection_name(map.projection).map { String(cString: $0) } ?? "unknown",
                yaw: Double(map.yaw) / 65536, pitch: Double(map.pitch) / 65536,
                roll: Double(map.roll) / 65536)
            if map.projection == AV_SPHERICAL_CUBEMAP { spherical.padding = map.padding }
            if map.projection == AV_SPHERICAL_EQUIRECTANGULAR_TILE {
                var l = 0, t = 0, r = 0, b = 0
                // C converts the int sizes to size_t; so does this.
                ff.av_spherical_tile_bounds(&map, Int(width), Int(height), &l, &t, &r, &b)
                spherical.bounds = [l, t, r, b]
            }
            return .spherical(spherical)
        case AV_PKT_DATA_SKIP_SAMPLES where bytes.count == 10:
            return .skipSamples(
                skip: UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)),
                discardPadding: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
                skipReason: bytes[8], discardReason: bytes[9])
        case AV_PKT_DATA_MASTERING_DISPLAY_METADATA:
            guard let m = value(AVMasteringDisplayMetadata.self) else { return .other }
            let p = m.display_primaries
            let primaries = [p.0.0, p.0.1, p.1.0, p.1.1, p.2.0, p.2.1, m.white_point.0, m.white_point.1].map(
                Rational.init)
            return .masteringDisplay(
                primaries: m.has_primaries != 0 ? primaries : nil,
                luminance: m.has_luminance != 0 ? (Rational(m.min_luminance), Rational(m.max_luminance)) : nil)
        case AV_PKT_DATA_CONTENT_LIGHT_LEVEL:
            guard let light = value(AVContentLightMetadata.self) else { return .other }
            return .contentLightLevel(maxContent: light.MaxCLL, maxAverage: light.MaxFALL)
        case AV_PKT_DATA_DOVI_CONF:
            guard let d = value(AVDOVIDecoderConfigurationRecord.self) else { return .other }
            return .doviConfiguration(
                SideData.DoviConfiguration(
                    versionMajor: d.dv_version_major, versionMinor: d.dv_version_minor, profile: d.dv_profile,
                    level: d.dv_level,
                    rpuPresent: d.rpu_present_flag, elPresent: d.el_present_flag, blPresent: d.bl_present_flag,
                    blSignalCompatibilityID: d.dv_bl_signal_compatibility_id))
        case AV_PKT_DATA_AUDIO_SERVICE_TYPE:
            return value(Int32.self).map { .audioServiceType($0) } ?? .other
        case AV_PKT_DATA_MPEGTS_STREAM_ID:
            return bytes.first.map { .mpegtsStreamID($0) } ?? .other
        case AV_PKT_DATA_CPB_PROPERTIES:
            guard let cpb = value(AVCPBProperties.self) else { return .other }
            return .cpbProperties(
                maxBitRate: cpb.max_bitrate, minBitRate: cpb.min_bitrate, averageBitRate: cpb.avg_bitrate,
                bufferSize: cpb.buffer_size, vbvDelay: cpb.vbv_delay)
        case AV_PKT_DATA_AFD where !bytes.isEmpty:
            return .activeFormat(bytes[0])
        default:
            return .other
        }
    }
}
