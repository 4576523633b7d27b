// Typed, non-variadic entry points for libcurl's variadic setopt/getinfo, which Swift cannot call.
#ifndef MPROBE_CCURL_SHIM_H
#define MPROBE_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode mp_curl_set_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode mp_curl_set_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode mp_curl_set_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode mp_curl_set_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode mp_curl_set_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode mp_curl_set_write_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode mp_curl_set_header_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}
static inline CURLcode mp_curl_set_xferinfo_cb(CURL *h, int (*cb)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb);
}
static inline CURLcode mp_curl_set_opensocket_cb(CURL *h, curl_socket_t (*cb)(void *, curlsocktype, struct curl_sockaddr *)) {
    return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb);
}
static inline CURLcode mp_curl_set_read_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb);
}
static inline curl_socket_t mp_curl_socket_bad(void) { return CURL_SOCKET_BAD; }
static inline CURLcode mp_curl_get_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode mp_curl_get_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode mp_curl_get_str(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
#endif
