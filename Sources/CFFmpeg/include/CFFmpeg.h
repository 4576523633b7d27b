// FFmpeg for Swift: its functions through a table filled by dlopen (see FFmpegFunctions.c), and
// what Swift cannot import from its headers (function-like macros, macro constants, bitfields).
#ifndef MPROBE_CFFMPEG_H
#define MPROBE_CFFMPEG_H
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
#include <libswscale/version_major.h>
#include <libavformat/version_major.h>
#include <libavcodec/version_major.h>
#include <libavutil/version.h>
#include <math.h>
#include <stddef.h>

/* Every FFmpeg function mprobe calls. They are called through `struct mp_ffmpeg`, never by name:
   mprobe is not linked against FFmpeg, so a command that never demuxes (cat, cache, --help) does
   not pay for loading libavformat and the ~130 libraries it pulls in (about 25 ms of a 38 ms
   start). A name missing here fails at link time, not at run time. */
#define MP_FFMPEG_FUNCTIONS(X) \
    X(av_add_index_entry) X(av_channel_layout_describe) X(av_chroma_location_name) X(av_color_primaries_name) \
    X(av_color_range_name) X(av_color_space_name) X(av_color_transfer_name) X(av_dict_free) \
    X(av_dict_get) X(av_dict_set) X(av_display_rotation_get) X(av_find_best_stream) \
    X(av_fourcc_make_string) X(av_frame_alloc) X(av_frame_free) X(av_frame_get_buffer) X(av_frame_ref) \
    X(av_frame_unref) X(av_free) X(av_freep) X(av_get_audio_frame_duration2) X(av_get_bits_per_sample) \
    X(av_get_media_type_string) \
    X(av_get_pix_fmt_name) X(av_get_sample_fmt_name) X(av_guess_sample_aspect_ratio) \
    X(av_image_fill_black) X(av_log_set_level) X(av_malloc) X(av_max_alloc) X(av_new_packet) X(av_opt_get) \
    X(av_opt_next) X(av_opt_set) X(av_packet_alloc) X(av_packet_free) X(av_packet_side_data_name) \
    X(av_packet_unref) X(av_pix_fmt_desc_get) X(av_read_frame) X(av_reduce) X(av_seek_frame) \
    X(av_spherical_projection_name) X(av_spherical_tile_bounds) X(av_stereo3d_type_name) \
    X(av_stream_get_side_data) X(av_strerror) X(av_utf8_decode) X(avcodec_alloc_context3) \
    X(avcodec_descriptor_get) X(avcodec_find_decoder) X(avcodec_find_encoder_by_name) \
    X(avcodec_flush_buffers) X(avcodec_free_context) X(avcodec_get_name) X(avcodec_open2) \
    X(avcodec_parameters_to_context) X(avcodec_profile_name) X(avcodec_receive_frame) \
    X(avcodec_receive_packet) X(avcodec_send_frame) X(avcodec_send_packet) X(avformat_alloc_context) \
    X(avformat_close_input) X(avformat_find_stream_info) X(avformat_index_get_entries_count) \
    X(avformat_index_get_entry) X(avformat_match_stream_specifier) X(avformat_open_input) \
    X(avformat_seek_file) X(avio_alloc_context) X(avio_context_free) X(avio_size) X(sws_scale) \
    X(sws_getContext) X(sws_freeContext)

/* Fields are named after the functions, so Swift calls read `ff.avformat_open_input(...)`. */
struct mp_ffmpeg {
#define MP_FFMPEG_FIELD(name) __typeof__(name) *_Nonnull name;
    MP_FFMPEG_FUNCTIONS(MP_FFMPEG_FIELD)
#undef MP_FFMPEG_FIELD
};

/* Opens FFmpeg's libraries (the major versions mprobe was built against) and fills the table, once
   per process however many threads ask; the libraries stay loaded, as linked ones would. Returns
   NULL when they cannot be loaded, with the loader's reason copied into `why`. */
const struct mp_ffmpeg *_Nullable mp_ffmpeg_load(char *_Nonnull why, size_t why_size);

/* Rotation in degrees from a stream's display matrix side data, or NAN when it has none.
   Only after mp_ffmpeg_load succeeded. */
double mp_stream_rotation(const AVStream *_Nonnull st);

/* Makes every URL a demuxer of `ctx` would open itself (an HLS or DASH demuxer's playlists and
   segments, an MP4's external data references) fail with AVERROR(EPERM): mprobe reads all bytes
   through its own cache, so nothing may be fetched around it. */
void mp_refuse_nested_opens(AVFormatContext *_Nonnull ctx);

static inline int mp_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int mp_averror_eof(void) { return AVERROR_EOF; }
static inline int mp_averror_exit(void) { return AVERROR_EXIT; }
static inline int mp_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t mp_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int mp_avseek_size(void) { return AVSEEK_SIZE; }
static inline int mp_avseek_force(void) { return AVSEEK_FORCE; }

/* AVIndexEntry's flags and size are bitfields; read them in C. */
static inline int mp_index_entry_is_keyframe(const AVIndexEntry *_Null_unspecified e) { return (e->flags & AVINDEX_KEYFRAME) != 0; }
static inline int mp_index_entry_size(const AVIndexEntry *_Null_unspecified e) { return e->size; }

#endif
