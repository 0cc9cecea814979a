/* bcryptprimitives.dll for Wine 8.0, which lacks it: Rust's standard library (1.78 and newer)
 * imports ProcessPrng from it, and every Rust program dies before main without it. Newer Wine
 * ships the DLL; CI builds this one only where the prefix has none. ProcessPrng fills the buffer
 * from the system's generator (RtlGenRandom, exported by advapi32 as SystemFunction036) and, as
 * Windows documents, always returns TRUE. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
