// knobs — run-time switches that launchers in several files read, kept in one place so that a test can flip
// one for the whole process. Each switch changes speed only, never a bit (the tests assert it).
#include <limits.h>
#include <stdlib.h>

#include "kernels.h"

// G4_CUDA_EARLY_LOADS (kernels.h; on unless "0"): read once, then kern_set_early_loads overrides it.
static int early_loads = -1;

// G4_CUDA_EARLY_PARTS (a diagnostic): which kernels take them when on, a mask of KERN_EARLY_* (default all).
static int early_parts = -1;

static void early_loads_read_env(void)
{
    if (early_loads < 0) {
        const char *v = getenv("G4_CUDA_EARLY_LOADS"), *m = getenv("G4_CUDA_EARLY_PARTS");
        early_loads = !(v && v[0] == '0');
        early_parts = m ? atoi(m) : KERN_EARLY_ALL;
    }
}

extern "C" int kern_early_loads(int part)
{
    early_loads_read_env();
    return early_loads && (early_parts & part);
}

extern "C" void kern_set_early_loads(int on)
{
    early_loads_read_env();
    early_loads = on != 0;
}

// G4_CUDA_EARLY_WEIGHTS (kernels.h; default: every stage of the ring, whatever its depth): read once.
extern "C" int kern_early_weight_stages(void)
{
    static int stages = -1;
    if (stages < 0) {
        const char *v = getenv("G4_CUDA_EARLY_WEIGHTS");
        stages = v && atoi(v) >= 0 ? atoi(v) : INT_MAX;
    }
    return stages;
}

// G4_CUDA_SKINNY_ROWS8 (kernels.h; on unless "0"): read once.
extern "C" int kern_skinny_rows8(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("G4_CUDA_SKINNY_ROWS8");
        on = !(v && v[0] == '0');
    }
    return on;
}

// G4_CUDA_MERGE_WIDE (kernels.h; "0" never, "1" always, else by rows): read once, then kern_set_merge_wide
// overrides it.
static int merge_wide = -2;

extern "C" int kern_merge_wide_mode(void)
{
    if (merge_wide == -2) {
        const char *v = getenv("G4_CUDA_MERGE_WIDE");
        merge_wide = v && (v[0] == '0' || v[0] == '1') ? v[0] - '0' : -1;
    }
    return merge_wide;
}

extern "C" int kern_merge_wide(int rows)
{
    int mode = kern_merge_wide_mode();
    return mode < 0 ? rows <= KERN_MERGE_WIDE_ROWS : mode;
}

extern "C" void kern_set_merge_wide(int mode) { merge_wide = mode < 0 ? -1 : mode != 0; }

// G4_CUDA_ATTN_WG (kernels.h; on unless "0"): read once, then kern_set_attention_wg overrides it.
static int attention_wg = -1;

extern "C" int kern_attention_wg(void)
{
    if (attention_wg < 0) {
        const char *v = getenv("G4_CUDA_ATTN_WG");
        attention_wg = !(v && v[0] == '0');
    }
    return attention_wg;
}

extern "C" void kern_set_attention_wg(int on) { attention_wg = on != 0; }

// G4_CUDA_WGMMA_ROWS (kernels.h, kern_gemm): the row count from which a product runs on the wgmma kernel instead
// of the decode kernel; default 65 (the decode kernel up to 64 rows). Same bits either way. (The prompt kernel
// from 64 rows for products of 8,192 outputs or more, faster alone for q|k|v, gate|up and the head, left the
// 64-stream step as it was: version 13.2.)
extern "C" int kern_gemm_on_decode_kernel(int M)
{
    static int rows = -1;
    if (rows < 0) {
        const char *v = getenv("G4_CUDA_WGMMA_ROWS");
        rows = v && atoi(v) > 0 ? atoi(v) : 65;
    }
    return M <= 64 && M < rows;
}
