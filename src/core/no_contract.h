/* Included last by a source file whose arithmetic must round exactly as written: no
 * a * b + c fused into one multiply-add, whatever the host's build flags (GNU mode fuses
 * them where the target has FMA, e.g. inside AVX-512 functions), so that the file's paths
 * and its twins elsewhere give the same bits. The build passes -ffp-contract=off as well;
 * this holds when a host's build does not. Applies to everything the file defines after
 * it. No include guard: a second inclusion says the same again. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
