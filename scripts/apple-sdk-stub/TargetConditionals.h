/* Stand-in for the Apple SDK's TargetConditionals.h, for `cargo check` of
 * the Apple targets on Linux (scripts/test-all.sh): ring's C code includes it
 * to tell macOS from iOS. Nothing is linked with it. */
#ifndef DRAINPIPE_TARGET_CONDITIONALS_STUB
#define DRAINPIPE_TARGET_CONDITIONALS_STUB
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#define TARGET_OS_IOS 0
#define TARGET_OS_WATCH 0
#define TARGET_OS_TV 0
#define TARGET_OS_SIMULATOR 0
#define TARGET_OS_EMBEDDED 0
#endif
