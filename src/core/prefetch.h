/* Cache prefetch hints: the address's line is requested now so a later access rarely waits
 * on memory. Hints only (nothing is read; any address may be given); a no-op where the
 * compiler has no builtin. */
#ifndef RVI_PREFETCH_H
#define RVI_PREFETCH_H

#if defined(__GNUC__) || defined(__clang__)
#define RVI_PREFETCH(address) __builtin_prefetch(address)
#define RVI_PREFETCH_WRITE(address) __builtin_prefetch((address), 1) /* the line will be written */
#else
#define RVI_PREFETCH(address) ((void)(address))
#define RVI_PREFETCH_WRITE(address) ((void)(address))
#endif

#endif
