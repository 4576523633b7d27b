// Loads libpq on first use (see CPostgres.h).
#include "CPostgres.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct mp_pq table;
static int loaded;
static char failure[512];

static void load(void) {
    /* libpq's soname has been libpq.so.5 since PostgreSQL 8.0. */
    void *handle = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *reason = dlerror();
        snprintf(failure, sizeof failure, "%s (Debian: apt-get install libpq5)", reason ? reason : "libpq.so.5");
        return;
    }
#define MP_PQ_RESOLVE(name) \
    if (!(table.name = (__typeof__(name) *)dlsym(handle, #name))) { \
        snprintf(failure, sizeof failure, "%s not found in libpq.so.5", #name); \
        return; \
    }
    MP_PQ_FUNCTIONS(MP_PQ_RESOLVE)
#undef MP_PQ_RESOLVE
    loaded = 1;
}

const struct mp_pq *mp_pq_load(char *why, size_t why_size) {
    pthread_once(&load_once, load);
    if (loaded) return &table;
    snprintf(why, why_size, "%s", failure);
    return NULL;
}
