// What Swift cannot import from FFmpeg's headers: function-like macros and macro constants.
#ifndef MPROBE_CFFMPEG_SHIM_H
#define MPROBE_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/opt.h>
#include <libavutil/avstring.h>
#include <libavutil/stereo3d.h>
#include <libavutil/spherical.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/dovi_meta.h>
#include <math.h>

static inline int mp_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int mp_averror_eof(void) { return AVERROR_EOF; }
static inline int mp_averror_exit(void) { return AVERROR_EXIT; }
static inline int mp_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t mp_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int mp_avseek_size(void) { return AVSEEK_SIZE; }
static inline int mp_avseek_force(void) { return AVSEEK_FORCE; }

/* AVIndexEntry's flags and size are bitfields; read them in C. */
static inline int mp_index_entry_is_keyframe(const AVIndexEntry *e) { return (e->flags & AVINDEX_KEYFRAME) != 0; }
static inline int mp_index_entry_size(const AVIndexEntry *e) { return e->size; }

/* Rotation in degrees from a stream's display matrix side data, or NAN when it has none. */
static inline double mp_stream_rotation(const AVStream *st) {
    size_t size = 0;
    const uint8_t *m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!m || size < 9 * sizeof(int32_t)) return NAN;
    return av_display_rotation_get((const int32_t *)m);
}
#endif
