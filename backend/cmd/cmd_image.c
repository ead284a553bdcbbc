/* cmd_image — `g4 patches`: reads an image file, runs shared/'s image pipeline (the same C the browser runs as
 * wasm), writes the patch rows as raw bytes and prints a JSON summary. Tests compare these bytes with Hugging
 * Face's processor and with the wasm build. Parses arguments, reads and writes files, prints; the image work
 * itself happens in shared/img_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cmd/cmd.h"
#include "cmd/cmd_image.h"
#include "img.h"
#include "util/util.h"

_Static_assert(IMG_ERR_MAX <= G4_ERR_MAX, "image errors must fit g4's error buffers");

/* The JSON summary of p (NULL on allocation failure). */
static cJSON *patches_json(const char *path, const struct img_patches *p, int budget, const char *fmt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pos = cJSON_CreateArray();
    if (!o || !pos) {
        cJSON_Delete(o);
        cJSON_Delete(pos);
        return NULL;
    }
    cJSON_AddStringToObject(o, "image", path);
    cJSON_AddStringToObject(o, "format", fmt);
    cJSON_AddNumberToObject(o, "width", p->src_w);
    cJSON_AddNumberToObject(o, "height", p->src_h);
    cJSON_AddNumberToObject(o, "max_soft_tokens", budget);
    cJSON_AddNumberToObject(o, "resized_width", p->resized_w);
    cJSON_AddNumberToObject(o, "resized_height", p->resized_h);
    cJSON_AddNumberToObject(o, "grid_w", p->grid_w);
    cJSON_AddNumberToObject(o, "grid_h", p->grid_h);
    cJSON_AddNumberToObject(o, "n", p->n);
    cJSON_AddNumberToObject(o, "row_bytes", IMG_ROW_BYTES);
    for (int i = 0; i < p->n; i++) {
        int xy[2] = {p->pos[2 * i], p->pos[2 * i + 1]};
        cJSON_AddItemToArray(pos, cJSON_CreateIntArray(xy, 2));
    }
    cJSON_AddItemToObject(o, "positions", pos);
    return o;
}

int cmd_patches(int argc, char **argv)
{
    const char *name = "patches", *image = NULL, *out = NULL;
    long budget = 280;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--image")) {
            if (!v) return cmd_usage_error(name, "--image needs a file");
            image = v;
            i++;
        } else if (!strcmp(a, "--out")) {
            if (!v) return cmd_usage_error(name, "--out needs a file");
            out = v;
            i++;
        } else if (!strcmp(a, "--max-soft-tokens")) {
            if (cmd_parse_int(name, a, v, 1, IMG_MAX_SOFT_TOKENS, &budget)) return 2;
            if (!img_budget_ok((int)budget))
                return cmd_usage_error(name, "--max-soft-tokens must be one of 70, 140, 280, 560, 1120");
            i++;
        } else {
            return cmd_usage_error(name, "unknown argument '%s'", a);
        }
    }
    if (!image || !out) return cmd_usage_error(name, "--image and --out are required");

    char err[G4_ERR_MAX] = "";
    size_t len = 0;
    struct img_patches p = {0};
    cJSON *j = NULL;
    char *text = NULL;
    int rc = 1;
    char *data = util_read_file(image, IMG_MAX_INPUT_BYTES, &len, err);
    if (!data) {
        fprintf(stderr, "g4 patches: %s\n", err);
        return 1;
    }
    if (img_process((const uint8_t *)data, len, (int)budget, &p, err) != IMG_OK) {
        fprintf(stderr, "g4 patches: %s: %s\n", image, err);
        goto free_data;
    }
    if (util_write_file(out, p.rows, (size_t)p.n * IMG_ROW_BYTES, err)) {
        fprintf(stderr, "g4 patches: %s\n", err);
        goto free_patches;
    }
    j = patches_json(image, &p, (int)budget, img_format_name(img_sniff((const uint8_t *)data, len)));
    text = j ? cJSON_PrintUnformatted(j) : NULL;
    G4_CHECK(text, "out of memory printing JSON");
    printf("%s\n", text);
    rc = 0;
    cJSON_free(text);
    cJSON_Delete(j);
free_patches:
    img_patches_free(&p);
free_data:
    free(data);
    return rc;
}
