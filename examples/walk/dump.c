#include "dump.h"

#include "drive.h"

static void triangles(FILE *out, const rvw_level *level, uint32_t id)
{
    const rvw_object *o = &level->objects[id];
    const float *t = level->triangles + (size_t)o->first_triangle * 9;
    fprintf(out, "{\"id\": %u, \"triangles\": [", id);
    for (uint32_t v = 0; v < o->triangle_count * 3; v++, t += 3)
        fprintf(out, "%s[%.9g, %.9g, %.9g]", v ? ", " : "", (double)t[0], (double)t[1], (double)t[2]);
    fputs("]}", out);
}

void rvw_dump_scene(FILE *out, const rvw_level *level)
{
    fprintf(out, "{\"format\": \"rvis-scene-1\", \"up\": \"y\", \"objects\": %u}\n", level->object_count);
    for (uint32_t i = 0; i < level->object_count; i++) {
        triangles(out, level, i);
        fputc('\n', out);
    }
}

static void id_list(FILE *out, const char *key, const uint8_t *verdict, uint32_t n, int want)
{
    fprintf(out, ", \"%s\": [", key);
    bool first = true;
    for (uint32_t i = 0; i < n; i++) {
        if (verdict[i] != want)
            continue;
        fprintf(out, first ? "%u" : ", %u", i);
        first = false;
    }
    fputc(']', out);
}

void rvw_dump_visibility(FILE *out, const rvw_level *level, const rvw_view *view,
                         const uint8_t *verdict, const uint8_t *visible, const uint8_t *ideal_box)
{
    fprintf(out, "{\"frame\": %u, \"eye\": [%.9g, %.9g, %.9g], \"view_projection\": [", view->frame,
            (double)view->eye[0], (double)view->eye[1], (double)view->eye[2]);
    for (int k = 0; k < 16; k++)
        fprintf(out, "%s%.9g", k ? ", " : "", (double)view->view_projection[k]);
    fputs("], \"clip\": {\"depth_zero_to_one\": false, \"reversed_z\": false}", out);
    id_list(out, "drawn", verdict, level->object_count, RVW_DRAWN);
    id_list(out, "excluded", verdict, level->object_count, RVW_EXCLUDED);
    if (visible && ideal_box) {
        id_list(out, "visible", visible, level->object_count, 1);
        id_list(out, "ideal_box_visible", ideal_box, level->object_count, 1);
    }
    bool any = false;
    for (uint32_t i = 0; i < level->object_count; i++) {
        if (level->objects[i].kind != RVW_OBJ_VEHICLE)
            continue;
        fputs(any ? ", " : ", \"moved\": [", out);
        triangles(out, level, i);
        any = true;
    }
    if (any)
        fputc(']', out);
    fputs("}\n", out);
}
