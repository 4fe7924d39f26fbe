/* rvis-bench: each case prints rvis's time next to a naive baseline measured in the same
 * run, and their ratio. Targets are reported, never enforced: exit 0 unless an error.
 * Options: rvis-bench --help. */
#include "bench_util.h"
#include "bench_cases.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *to)
{
    fprintf(to,
            "usage: rvis-bench [options]\n"
            "  --json              one JSON array of every case on stdout, instead of the table\n"
            "  --quick             3 repetitions per case instead of 7 (never smaller cases)\n"
            "  --reps N            N repetitions per case, 1..100 (--reps 1: a check that every\n"
            "                      case runs, its times one sample each)\n"
            "  --cpu-clock         time with the thread's CPU clock, not the wall clock (for a\n"
            "                      loaded machine: every case runs on one thread)\n"
            "  --only SUBSTRING    run only the cases whose name contains SUBSTRING\n"
            "  --help              this list\n");
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "json", no_argument, NULL, 'j' },
        { "quick", no_argument, NULL, 'q' },
        { "reps", required_argument, NULL, 'r' },
        { "cpu-clock", no_argument, NULL, 'c' },
        { "only", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    rvb_ctx ctx = { .reps = 7 };
    int reps = 0;
    for (int opt; (opt = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        switch (opt) {
        case 'j': ctx.json = true; break;
        case 'q': ctx.quick = true; break;
        case 'r': {
            char *end = NULL;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || n < 1 || n > 100) {
                fprintf(stderr, "rvis-bench: --reps wants a whole number from 1 to 100, not '%s'\n", optarg);
                return 2;
            }
            reps = (int)n;
            break;
        }
        case 'c': rvb_use_cpu_clock(); break;
        case 'o': ctx.only = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2; /* getopt_long has named the bad option */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rvis-bench: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (ctx.quick)
        ctx.reps = 3; /* --quick: fewer repetitions (never smaller cases); full runs take 7 */
    if (reps)
        ctx.reps = reps;
    int failures = 0;
    for (size_t i = 0; i < rvb_case_count; i++)
        if (rvb_cases[i](&ctx) != 0)
            failures++;
    if (ctx.json)
        printf(ctx.printed ? "\n]\n" : "[]\n");
    return failures ? 1 : 0;
}
