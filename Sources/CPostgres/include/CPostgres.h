// libpq for Swift: its functions through a table filled by dlopen (see PostgresFunctions.c).
#ifndef MPROBE_CPOSTGRES_H
#define MPROBE_CPOSTGRES_H
#include <postgresql/libpq-fe.h>
#include <stddef.h>

/* Every libpq function mprobe calls, through `struct mp_pq`, never by name: only
   `serve --jobs postgres://...` needs PostgreSQL's client library, so the binary is not linked
   against it and runs where libpq5 is not installed. A name missing here fails at link time. */
#define MP_PQ_FUNCTIONS(X) \
    X(PQconnectdbParams) X(PQstatus) X(PQerrorMessage) X(PQfinish) X(PQexec) X(PQexecParams) \
    X(PQresultStatus) X(PQresultErrorMessage) X(PQresultErrorField) X(PQntuples) X(PQnfields) \
    X(PQgetvalue) X(PQgetisnull) X(PQclear) X(PQcmdTuples) X(PQsocket) X(PQconsumeInput) \
    X(PQnotifies) X(PQfreemem) X(PQserverVersion)

struct mp_pq {
#define MP_PQ_FIELD(name) __typeof__(name) *_Nonnull name;
    MP_PQ_FUNCTIONS(MP_PQ_FIELD)
#undef MP_PQ_FIELD
};

/* The table, loaded on the first call (thread-safe); NULL with the reason in `why` when libpq
   cannot be loaded. */
const struct mp_pq *_Nullable mp_pq_load(char *_Nonnull why, size_t why_size);

/* PG_DIAG_SQLSTATE, a macro Swift cannot import as an Int32. */
static inline int mp_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
#endif
