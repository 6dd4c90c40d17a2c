/*
 * Stand-in for the macOS SDK's <stdlib.h> when checking the Apple targets
 * from Linux (scripts/test-all.sh). wasmtime's build script compiles one
 * small C file (src/runtime/vm/helpers.c) that includes it for NULL alone;
 * its object is never linked by `cargo check`.
 */
#include <stddef.h>
