#include "sort.h"

#include <stdint.h>
#include <string.h>

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
    unsigned char t[64];
    while (size > 0) {
        size_t n = size < sizeof t ? size : sizeof t;
        memcpy(t, a, n);
        memcpy(a, b, n);
        memcpy(b, t, n);
        a += n;
        b += n;
        size -= n;
    }
}

/* Moves element i down the heap of the first n elements until neither child is larger. */
static void sift_down(unsigned char *base, size_t i, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            return;
        if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
            child++;
        if (cmp(base + i * size, base + child * size) >= 0)
            return;
        swap_bytes(base + i * size, base + child * size, size);
        i = child;
    }
}

void rvi_sort(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *))
{
    unsigned char *b = base;
    if (count < 2 || size == 0)
        return;
    for (size_t i = count / 2; i-- > 0;)
        sift_down(b, i, count, size, cmp);
    for (size_t n = count - 1; n > 0; n--) {
        swap_bytes(b, b + n * size, size);
        sift_down(b, 0, n, size, cmp);
    }
}
