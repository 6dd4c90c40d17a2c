/*
 * Stand-in for the macOS SDK's <assert.h> when checking the Apple targets
 * from Linux (scripts/test-all.sh): ring's C code includes it; its objects
 * are never linked by `cargo check`.
 */
#ifndef DRAINPIPE_ASSERT_STUB
#define DRAINPIPE_ASSERT_STUB
#define assert(condition) ((void)0)
#endif
