/*
 * Stand-in for the macOS SDK's <string.h> when checking the Apple targets
 * from Linux (scripts/test-all.sh): ring's C code (the TLS of `proxy --url`)
 * includes it for the mem* functions; its objects are never linked by
 * `cargo check`.
 */
#ifndef DRAINPIPE_STRING_STUB
#define DRAINPIPE_STRING_STUB
#include <stddef.h>
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
#endif
