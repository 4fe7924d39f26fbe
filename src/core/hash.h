/* Hashing: a 64-bit mixer (splitmix64 finaliser) and an order-independent digest builder. */
#ifndef RVI_HASH_H
#define RVI_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rvi_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* FNV-1a-style streaming hash over bytes, finished with rvi_mix64; deterministic across runs. */
uint64_t rvi_hash_bytes(uint64_t seed, const void *bytes, size_t size);

#endif
