/* Sorting without allocation. */
#ifndef RVI_SORT_H
#define RVI_SORT_H

#include <stddef.h>

/* Sorts count elements of size bytes at base into ascending order by cmp (qsort's contract:
 * negative, zero or positive; equal elements may end in any order), in place and without
 * allocating: heapsort (Williams, CACM 1964; the heap built bottom-up as Floyd, CACM 1964),
 * O(n log n) comparisons at worst. libc's qsort may allocate (glibc's merge sort mallocs a
 * scratch copy of any array of a kilobyte or more) behind the host's allocator, and a frame
 * must not. */
void rvi_sort(void *base, size_t count, size_t size, int (*cmp)(const void *, const void *));

#endif
