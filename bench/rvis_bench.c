/* rvis-bench: each case prints rvis's time next to a naive baseline measured in the same
 * run, and their ratio. Targets are reported, never enforced: exit 0 unless an error.
 * Usage: rvis-bench [--json] [--quick] [--cpu-clock] [--only SUBSTRING]
 * --cpu-clock: time with the thread's CPU clock rather than the wall clock (for a loaded
 * machine; every case in this program runs on one thread). */
#include "bench_util.h"
#include "bench_cases.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    rvb_ctx ctx = { .reps = 7 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) ctx.json = true;
        else if (!strcmp(argv[i], "--quick")) ctx.quick = true;
        else if (!strcmp(argv[i], "--cpu-clock")) rvb_use_cpu_clock();
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) ctx.only = argv[++i];
        else {
            fprintf(stderr, "usage: rvis-bench [--json] [--quick] [--cpu-clock] [--only SUBSTRING]\n");
            return 2;
        }
    }
    if (ctx.quick)
        ctx.reps = 3; /* --quick: fewer repetitions (never smaller cases); full runs take 7 */
    int failures = 0;
    for (size_t i = 0; i < rvb_case_count; i++)
        if (rvb_cases[i](&ctx) != 0)
            failures++;
    if (ctx.json)
        printf(ctx.printed ? "\n]\n" : "[]\n");
    return failures ? 1 : 0;
}
