// Loads FFmpeg's shared libraries on first use instead of at process start (see CFFmpeg.h).
#include "CFFmpeg.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MP_SONAME(lib, major) "lib" #lib ".so." AV_STRINGIFY(major)

/* The sonames of the versions whose headers mprobe was compiled with, as the linker would record
   them; avutil first, as the others depend on it. */
static const char *const sonames[] = {
    MP_SONAME(avutil, LIBAVUTIL_VERSION_MAJOR),
    MP_SONAME(avcodec, LIBAVCODEC_VERSION_MAJOR),
    MP_SONAME(avformat, LIBAVFORMAT_VERSION_MAJOR),
    MP_SONAME(swscale, LIBSWSCALE_VERSION_MAJOR),
};
enum { library_count = sizeof sonames / sizeof sonames[0] };

/* Written once under pthread_once, read-only afterwards: the process-wide counterpart of the
   dynamic loader's own tables, which linking would have filled at start. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct mp_ffmpeg table;
static int loaded;
static char failure[512];

static void *find(void *const handles[], const char *name) {
    for (int i = 0; i < library_count; i++) {
        void *symbol = dlsym(handles[i], name);
        if (symbol) return symbol;
    }
    snprintf(failure, sizeof failure, "%s not found in FFmpeg's libraries", name);
    return NULL;
}

static void load(void) {
    void *handles[library_count];
    for (int i = 0; i < library_count; i++) {
        handles[i] = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char *reason = dlerror();
            snprintf(failure, sizeof failure, "%s", reason ? reason : sonames[i]);
            return;
        }
    }
#define MP_FFMPEG_RESOLVE(name) \
    if (!(table.name = (__typeof__(name) *)find(handles, #name))) return;
    MP_FFMPEG_FUNCTIONS(MP_FFMPEG_RESOLVE)
#undef MP_FFMPEG_RESOLVE
    loaded = 1;
}

const struct mp_ffmpeg *mp_ffmpeg_load(char *why, size_t why_size) {
    pthread_once(&load_once, load);
    if (loaded) return &table;
    snprintf(why, why_size, "%s", failure);
    return NULL;
}

double mp_stream_rotation(const AVStream *st) {
    size_t size = 0;
    const uint8_t *m = table.av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!m || size < 9 * sizeof(int32_t)) return NAN;
    return table.av_display_rotation_get((const int32_t *)m);
}

static int refuse_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options) {
    (void)s; (void)pb; (void)url; (void)flags; (void)options;
    return AVERROR(EPERM);
}

void mp_refuse_nested_opens(AVFormatContext *ctx) {
    ctx->io_open = refuse_open;
}
