#include "core/hash.h"

uint64_t rvi_hash_bytes(uint64_t seed, const void *bytes, size_t size)
{
    const unsigned char *p = bytes;
    uint64_t h = 0xcbf29ce484222325ull ^ rvi_mix64(seed);
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return rvi_mix64(h);
}
