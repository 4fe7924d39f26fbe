/* Every public function has a hostile case (suite hostile).
 *
 * Reads the umbrella include/rvis.h (path from the environment variable RVIS_HEADER, set by
 * tests/meson.build) and every header it includes as "rvis/<module>.h", lists every
 * function declared with RV_API, and fails naming each
 * one that is neither in the hostile table (RVH_CASES of hostile_table.h, the list
 * test_hostile.c runs) nor in its commented exemption list (RVH_EXEMPT). It also fails on
 * table entries the header no longer declares, and on names listed twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hostile_table.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RVH_NAME(fn) #fn,
static const char *const covered[] = { RVH_CASES(RVH_NAME) };
#define RVH_EXEMPT_NAME(fn, why) #fn,
static const char *const exempt[] = { RVH_EXEMPT(RVH_EXEMPT_NAME) NULL };
enum { COVERED = sizeof covered / sizeof covered[0], EXEMPT = sizeof exempt / sizeof exempt[0] - 1 };

enum { MAX_API = 1024, MAX_NAME = 128 };

typedef struct api_list {
    char names[MAX_API][MAX_NAME];
    int count;
} api_list;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(size > 0);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

/* The umbrella and, in the order it includes them, every module header it names: the
 * umbrella's own text first, then each "rvis/<module>.h" appended. */
static char *read_header(void)
{
    const char *path = getenv("RVIS_HEADER");
    if (!path)
        fail_msg("RVIS_HEADER is not set (tests/meson.build sets it to include/rvis.h)");
    char *all = read_file(path);
    size_t dir_len = strlen(path);
    while (dir_len > 0 && path[dir_len - 1] != '/')
        dir_len--;
    int modules = 0;
    for (const char *p = strstr(all, "#include \"rvis/"); p; p = strstr(p + 1, "#include \"rvis/")) {
        const char *name = p + strlen("#include \"");
        const char *end = strchr(name, '"');
        assert_non_null(end);
        char sub[512];
        assert_true(dir_len + (size_t)(end - name) < sizeof sub);
        memcpy(sub, path, dir_len);
        memcpy(sub + dir_len, name, (size_t)(end - name));
        sub[dir_len + (size_t)(end - name)] = '\0';
        char *text = read_file(sub);
        size_t a = strlen(all), b = strlen(text);
        char *joined = malloc(a + b + 2);
        assert_non_null(joined);
        memcpy(joined, all, a);
        joined[a] = '\n';
        memcpy(joined + a + 1, text, b + 1);
        /* p points into all: keep its offset across the swap */
        size_t off = (size_t)(p - all);
        free(all);
        free(text);
        all = joined;
        p = all + off;
        modules++;
    }
    /* One header per module: a parser that follows none of them reads only the umbrella. */
    assert_true(modules >= 9);
    return all;
}

/* Blanks comments and preprocessor lines (where RV_API is defined), keeping newlines. */
static void strip(char *t)
{
    bool line_start = true;
    for (char *p = t; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            for (; p < stop; p++)
                if (*p != '\n')
                    *p = ' ';
            p--;
            continue;
        }
        if ((p[0] == '/' && p[1] == '/') || (line_start && *p == '#')) {
            /* to the end of the line, following backslash continuations */
            for (; *p && !(*p == '\n' && p[-1] != '\\'); p++)
                *p = ' ';
            if (!*p)
                break;
        }
        if (*p == '\n')
            line_start = true;
        else if (!isspace((unsigned char)*p))
            line_start = false;
    }
}

static bool is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Every RV_API declaration's function name: the identifier right before the first '('. */
static void list_api(char *t, api_list *out)
{
    out->count = 0;
    for (char *p = strstr(t, "RV_API"); p; p = strstr(p + 6, "RV_API")) {
        if ((p > t && is_ident(p[-1])) || is_ident(p[6]))
            continue;
        char *paren = strchr(p + 6, '(');
        assert_non_null(paren);
        char *end = paren;
        while (end > p && isspace((unsigned char)end[-1]))
            end--;
        char *start = end;
        while (start > p && is_ident(start[-1]))
            start--;
        size_t n = (size_t)(end - start);
        assert_true(n > 0 && n < MAX_NAME);
        assert_true(out->count < MAX_API);
        memcpy(out->names[out->count], start, n);
        out->names[out->count][n] = '\0';
        out->count++;
    }
}

static bool in(const char *const *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

static api_list api;

static void test_header_declares_functions(void **state)
{
    (void)state;
    char *text = read_header();
    strip(text);
    list_api(text, &api);
    free(text);
    /* The core alone declares a handful; a parser that finds none is broken. */
    assert_true(api.count >= 8);
    assert_string_equal(api.names[0], "rv_result_string");
}

static void test_every_public_function_has_a_hostile_case(void **state)
{
    (void)state;
    int missing = 0;
    for (int i = 0; i < api.count; i++)
        if (!in(covered, COVERED, api.names[i]) && !in(exempt, EXEMPT, api.names[i])) {
            print_error("missing from the hostile table: %s\n", api.names[i]);
            missing++;
        }
    if (missing)
        fail_msg("%d public function(s) have no hostile case: add them to tests/hostile_table.h "
                 "with a case in tests/hostile/, or to RVH_EXEMPT with the reason", missing);
}

static void test_hostile_table_names_only_public_functions_once(void **state)
{
    (void)state;
    const char *all[COVERED + EXEMPT + 1];
    int n = 0;
    for (int i = 0; i < COVERED; i++)
        all[n++] = covered[i];
    for (int i = 0; i < EXEMPT; i++)
        all[n++] = exempt[i];
    int bad = 0;
    for (int i = 0; i < n; i++) {
        bool declared = false;
        for (int j = 0; j < api.count; j++)
            declared |= strcmp(api.names[j], all[i]) == 0;
        if (!declared) {
            print_error("in the hostile table but not declared RV_API in any public header: %s\n", all[i]);
            bad++;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(all[i], all[j]) == 0) {
                print_error("listed twice: %s\n", all[i]);
                bad++;
            }
    }
    if (bad)
        fail_msg("%d bad hostile-table entries", bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_declares_functions),
        cmocka_unit_test(test_every_public_function_has_a_hostile_case),
        cmocka_unit_test(test_hostile_table_names_only_public_functions_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
