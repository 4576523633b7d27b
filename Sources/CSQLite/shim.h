// SQLITE_TRANSIENT is a macro casting -1 to a destructor pointer; Swift cannot import it.
#ifndef MPROBE_CSQLITE_SHIM_H
#define MPROBE_CSQLITE_SHIM_H
#include <sqlite3.h>

static inline int mp_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *v) {
    return sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
}
#endif
