/* rvis-walk: finding a map's bytes. A map is named as
 *   NAME                 maps/NAME.bsp inside the default pak (RVW_DEFAULT_PAK),
 *   PAK:maps/x.bsp       an entry of a .pk3 (split at the last ':' before "maps/"),
 *   path/to/x.bsp        a plain file.
 * A .pk3 is a zip read with libzip; a build without libzip refuses .pk3 input. */
#ifndef RVW_PK3_H
#define RVW_PK3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RVW_DEFAULT_PAK "/usr/share/games/openarena/baseoa/pak1-maps.pk3"
/* Largest map file read (bytes); real maps are below 10 MB. */
#define RVW_MAX_MAP_BYTES (256u * 1024u * 1024u)

/* Where a map spec points. */
typedef struct rvw_map_source {
    char pak[1024];     /* empty for a plain file */
    char entry[512];    /* the zip entry, or the file path when pak is empty */
    char name[64];      /* the map's name: the entry's file name without ".bsp" */
} rvw_map_source;

/* Splits spec into *out. False (with a reason in err) for an empty or overlong spec or a
 * .pk3 named without an entry. */
bool rvw_map_source_parse(const char *spec, rvw_map_source *out, char *err, size_t errlen);

/* Reads the map's bytes into a malloc'd buffer (*bytes, *size; free() it). On failure
 * returns false with a one-line reason in err; *pak_missing is set when the failure is
 * that the .pk3 file itself does not exist. */
bool rvw_map_source_read(const rvw_map_source *src, uint8_t **bytes, size_t *size,
                         bool *pak_missing, char *err, size_t errlen);

/* True when this build reads .pk3 files (libzip). */
bool rvw_have_zip(void);

#endif
