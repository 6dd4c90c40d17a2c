/*
 * bcryptprimitives.dll for wine 8.0, which lacks it.
 *
 * Rust's standard library on Windows takes its random bytes (HashMap keys)
 * from ProcessPrng in bcryptprimitives.dll; without the DLL every Rust .exe
 * fails to start under wine 8.0. This one exports ProcessPrng over
 * RtlGenRandom (advapi32's SystemFunction036), which wine has. It is for
 * running the Windows builds under wine in the tests, never shipped: placed
 * beside the .exe files by scripts/wine-build.sh.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        /* RtlGenRandom takes a 32-bit length. */
        ULONG piece = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, piece))
            return FALSE;
        data += piece;
        length -= piece;
    }
    return TRUE;
}
