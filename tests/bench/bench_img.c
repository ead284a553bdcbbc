/* bench_img — time of the image pipeline on a 12-megapixel JPEG (4000 x 3000, quality 90, 4:2:0, made
 * here with libjpeg from smooth shapes and texture): decode, resize, patchify, natively; then the same file
 * through the wasm module under node (webui/bench-wasm.js) when node and $G4_BUILD/web/g4img.wasm exist.
 * Prints a table (median of 5 runs per row); figures go to docs/perf.md "Image pipeline". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "img.h"
#include "util/util.h"

#define W 4000
#define H 3000
#define RUNS 5

static unsigned char *make_jpeg(unsigned long *len)
{
    uint8_t *rgb = malloc((size_t)W * H * 3);
    uint32_t s = 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            s = s * 1664525u + 1013904223u;
            for (int c = 0; c < 3; c++) {
                double v = 128 + 60 * sin(0.004 * x * (c + 1) + 0.003 * y) + 40 * cos(0.011 * (x + y) * (3 - c));
                if (((x / 300) + (y / 300)) % 5 == 0) v = 40 + 60 * c;
                v += (double)((s >> (8 + 4 * c)) & 15) - 8;
                rgb[((size_t)y * W + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    ci.err = jpeg_std_error(&e);
    jpeg_create_compress(&ci);
    jpeg_mem_dest(&ci, &out, len);
    ci.image_width = W;
    ci.image_height = H;
    ci.input_components = 3;
    ci.in_color_space = JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 90, TRUE);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < H) {
        JSAMPROW row = rgb + (size_t)ci.next_scanline * W * 3;
        jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(rgb);
    return out;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof *v, cmp_double);
    return v[RUNS / 2];
}

int main(void)
{
    const char *build = getenv("G4_BUILD") ? getenv("G4_BUILD") : "build";
    unsigned long len = 0;
    unsigned char *jpg = make_jpeg(&len);
    char path[512], err[IMG_ERR_MAX];
    snprintf(path, sizeof path, "%s/bench/img_12mp.jpg", build);
    G4_CHECK(util_write_file(path, jpg, len, err) == 0, "%s", err);
    printf("image pipeline, %d x %d JPEG (%lu bytes, q90 4:2:0), median of %d runs, one thread\n", W, H, len,
           RUNS);
    printf("%-8s %10s %10s %10s %10s %6s\n", "budget", "decode ms", "resize ms", "patch ms", "total ms", "n");
    int budgets[3] = {70, 280, 1120};
    for (int b = 0; b < 3; b++) {
        double td[RUNS], tr[RUNS], tp[RUNS], tt[RUNS];
        int n = 0;
        for (int r = 0; r < RUNS; r++) {
            struct img_rgb im;
            struct img_patches p;
            int th, tw;
            double t0 = util_now();
            G4_CHECK(img_decode(jpg, len, &im, err) == IMG_OK, "%s", err);
            double t1 = util_now();
            G4_CHECK(img_target_size(im.h, im.w, budgets[b], &th, &tw, err) == IMG_OK, "%s", err);
            uint8_t *rs = g4_malloc((size_t)th * tw * 3);
            G4_CHECK(img_resize(im.px, im.h, im.w, rs, th, tw, err) == IMG_OK, "%s", err);
            double t2 = util_now();
            G4_CHECK(img_patchify(rs, th, tw, &p, err) == IMG_OK, "%s", err);
            double t3 = util_now();
            td[r] = (t1 - t0) * 1e3, tr[r] = (t2 - t1) * 1e3, tp[r] = (t3 - t2) * 1e3, tt[r] = (t3 - t0) * 1e3;
            n = p.n;
            img_patches_free(&p);
            free(rs);
            img_rgb_free(&im);
        }
        printf("%-8d %10.1f %10.1f %10.2f %10.1f %6d\n", budgets[b], median(td), median(tr), median(tp),
               median(tt), n);
    }
    free(jpg);
    char wasm[512], cmd[1200];
    snprintf(wasm, sizeof wasm, "%s/web/g4img.wasm", build);
    if (access(wasm, R_OK) == 0 && system("command -v node >/dev/null 2>&1") == 0) {
        snprintf(cmd, sizeof cmd, "node webui/bench-wasm.js %s/web %s", build, path);
        printf("wasm (node): %s\n", cmd);
        fflush(stdout);
        if (system(cmd) != 0) printf("wasm bench failed\n");
    } else {
        printf("wasm: skipped (needs node and %s: make webui)\n", wasm);
    }
    return 0;
}
