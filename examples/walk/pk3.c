#include "pk3.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef RVW_HAVE_ZIP
#include <zip.h>
#endif

bool rvw_have_zip(void)
{
#ifdef RVW_HAVE_ZIP
    return true;
#else
    return false;
#endif
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static void name_of(const char *path, char *out, size_t outlen)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (ends_with(base, ".bsp"))
        n -= 4;
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

bool rvw_map_source_parse(const char *spec, rvw_map_source *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty map name");
        return false;
    }
    /* PAK:maps/x.bsp — the last ':' that is followed by "maps/" (a drive letter's ':' is not) */
    const char *split = NULL;
    for (const char *p = spec; (p = strchr(p, ':')) != NULL; p++)
        if (strncmp(p + 1, "maps/", 5) == 0)
            split = p;
    int n;
    if (split) {
        n = snprintf(out->pak, sizeof out->pak, "%.*s", (int)(split - spec), spec);
        if (n >= 0 && (size_t)n < sizeof out->pak)
            n = snprintf(out->entry, sizeof out->entry, "%s", split + 1);
    } else if (ends_with(spec, ".pk3")) {
        snprintf(err, errlen, "%s: name a map inside the pak as PAK:maps/NAME.bsp", spec);
        return false;
    } else if (ends_with(spec, ".bsp") || strchr(spec, '/')) {
        n = snprintf(out->entry, sizeof out->entry, "%s", spec);
    } else {
        n = snprintf(out->pak, sizeof out->pak, "%s", RVW_DEFAULT_PAK);
        n = snprintf(out->entry, sizeof out->entry, "maps/%s.bsp", spec);
    }
    if (n < 0 || (size_t)n >= sizeof out->entry || !out->entry[0]) {
        snprintf(err, errlen, "map name too long or empty: %.60s", spec);
        return false;
    }
    name_of(out->entry, out->name, sizeof out->name);
    return true;
}

static bool read_file(const char *path, uint8_t **bytes, size_t *size, char *err, size_t errlen)
{
    /* Opened without blocking (a FIFO would wait for a writer), then refused unless it is
     * a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return false;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        close(fd);
        return false;
    }
    if ((uint64_t)st.st_size > RVW_MAX_MAP_BYTES) {
        snprintf(err, errlen, "%s is larger than %u bytes", path, RVW_MAX_MAP_BYTES);
        fclose(f);
        return false;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf || fread(buf, 1, n, f) != n) {
        snprintf(err, errlen, buf ? "cannot read %s" : "out of memory reading %s", path);
        free(buf);
        fclose(f);
        return false;
    }
    fclose(f);
    *bytes = buf;
    *size = n;
    return true;
}

#ifdef RVW_HAVE_ZIP
static bool read_zip_entry(const rvw_map_source *src, uint8_t **bytes, size_t *size, char *err,
                           size_t errlen)
{
    int code = 0;
    zip_t *zip = zip_open(src->pak, ZIP_RDONLY, &code);
    if (!zip) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, code);
        snprintf(err, errlen, "cannot open %s: %s", src->pak, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return false;
    }
    bool ok = false;
    uint8_t *buf = NULL;
    zip_file_t *file = NULL;
    zip_int64_t index = zip_name_locate(zip, src->entry, ZIP_FL_NOCASE);
    zip_stat_t st;
    if (index < 0) {
        snprintf(err, errlen, "no map %s in %s", src->entry, src->pak);
    } else if (zip_stat_index(zip, (zip_uint64_t)index, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
        snprintf(err, errlen, "cannot read %s in %s: %s", src->entry, src->pak, zip_strerror(zip));
    } else if (st.size > RVW_MAX_MAP_BYTES) {
        snprintf(err, errlen, "%s in %s is larger than %u bytes", src->entry, src->pak,
                 RVW_MAX_MAP_BYTES);
    } else if (!(buf = malloc(st.size ? (size_t)st.size : 1))) {
        snprintf(err, errlen, "out of memory reading %s", src->entry);
    } else if (!(file = zip_fopen_index(zip, (zip_uint64_t)index, 0))) {
        snprintf(err, errlen, "cannot open %s in %s: %s", src->entry, src->pak, zip_strerror(zip));
    } else {
        zip_int64_t got = zip_fread(file, buf, st.size);
        if (got < 0) {
            snprintf(err, errlen, "cannot read %s in %s: %s", src->entry, src->pak,
                     zip_file_strerror(file));
        } else if ((zip_uint64_t)got != st.size) {
            /* the entry ends before the size the directory gives: libzip has no error to name */
            snprintf(err, errlen, "cannot read %s in %s: short read: got %llu of %llu bytes", src->entry,
                     src->pak, (unsigned long long)got, (unsigned long long)st.size);
        } else {
            *bytes = buf;
            *size = (size_t)st.size;
            buf = NULL;
            ok = true;
        }
    }
    if (file)
        zip_fclose(file);
    zip_discard(zip);
    free(buf);
    return ok;
}
#endif

bool rvw_map_source_read(const rvw_map_source *src, uint8_t **bytes, size_t *size,
                         bool *pak_missing, char *err, size_t errlen)
{
    *pak_missing = false;
    if (!src->pak[0])
        return read_file(src->entry, bytes, size, err, errlen);
    struct stat st;
    if (stat(src->pak, &st) != 0) {
        *pak_missing = true;
        snprintf(err, errlen, "%s not found%s", src->pak,
                 strcmp(src->pak, RVW_DEFAULT_PAK) ? ""
                                                   : " (Debian: apt-get install openarena-081-maps)");
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", src->pak);
        return false;
    }
#ifdef RVW_HAVE_ZIP
    return read_zip_entry(src, bytes, size, err, errlen);
#else
    snprintf(err, errlen, "rvis-walk was built without libzip: cannot read %s; pass a .bsp file",
             src->pak);
    return false;
#endif
}
