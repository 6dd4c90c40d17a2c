# shellcheck shell=bash
# ASan's options for a fuzz run of one target; sourced by run.sh and
# ci-smoke.sh: `ASAN_OPTIONS=$(asan_options TARGET) cargo fuzz run ...`.
#
# Two of ASan's defaults cost every input and can find nothing in the code
# these targets run, so they are off:
#
# - `detect_stack_use_after_return`: each call whose locals' addresses are
#   taken gets its frame from a heap (`__asan_stack_malloc_*`), to catch a
#   pointer to a local used after its function returned. Only `unsafe` code
#   can keep such a pointer: the framer forbids it (`forbid(unsafe_code)`),
#   the harness has none, and the dependencies' `unsafe` (memchr's and
#   simdutf8's SIMD loads, serde_json's) reads slices handed to it.
# - `malloc_context_size`: every allocation and free unwinds and stores its
#   stack, for a report to say where a bad address was allocated and freed.
#   The report still names the bad access and its stack; the command a
#   failure prints to reproduce it runs without these options, with both
#   stacks.
#
# `condense` allocates for every value it generates, parses and checks: the
# two were 18 % of its samples, and it runs 1.2 to 1.4 times the inputs a
# second without them (fuzz/README.md, "Where an input's time goes under
# ASan"). `component_parity`
# keeps ASan's defaults: wasmtime's own unsafe code runs in it. Options in
# the caller's ASAN_OPTIONS come after these, so they win.
asan_options() {
    local ours="detect_stack_use_after_return=0:malloc_context_size=0"
    if [ "$1" = component_parity ]; then
        ours=""
    fi
    local theirs="${ASAN_OPTIONS:-}"
    if [ -n "$ours" ] && [ -n "$theirs" ]; then
        echo "$ours:$theirs"
    else
        echo "$ours$theirs"
    fi
}
