// kv_store — after attention, each row's new key and value join its stream's cache at slot pos % cap
// (a sliding layer's ring keeps the last cap positions; a full layer's cap is the context). Rows older than
// the last cap positions of their item would be overwritten within the same item and are skipped.
#include "common.cuh"
#include "kernels.h"

__global__ void kv_store_kernel(const uint16_t *__restrict__ k_new, const uint16_t *__restrict__ v_new,
                                const struct kern_row *__restrict__ meta, int kvd, int cap, uint16_t *__restrict__ ck,
                                uint16_t *__restrict__ cv)
{
    kern_dep_launch();
    kern_dep_wait();
    int r = blockIdx.x;
    struct kern_row m = meta[r];
    int last = m.pos0 + (m.item_end - m.base) - 1;
    if (m.pos <= last - cap) return;
    size_t dst = ((size_t)m.stream * cap + m.pos % cap) * kvd, src = (size_t)r * kvd;
    if (kvd % 8 == 0) { // 16-byte pieces: one round of loads for a row, not kvd / 256
        for (int i = threadIdx.x; i < kvd / 8; i += blockDim.x) {
            reinterpret_cast<uint4 *>(ck + dst)[i] = reinterpret_cast<const uint4 *>(k_new + src)[i];
            reinterpret_cast<uint4 *>(cv + dst)[i] = reinterpret_cast<const uint4 *>(v_new + src)[i];
        }
        return;
    }
    for (int i = threadIdx.x; i < kvd; i += blockDim.x) {
        ck[dst + i] = k_new[src + i];
        cv[dst + i] = v_new[src + i];
    }
}

extern "C" void kern_kv_store(const uint16_t *k_new, const uint16_t *v_new, const struct kern_row *rows_meta, int rows,
                              int kvd, int cap, uint16_t *cache_k, uint16_t *cache_v, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(kv_store_kernel, dim3(rows), dim3(256), 0, s, k_new, v_new, rows_meta, kvd, cap, cache_k, cache_v);
    KERN_LAUNCHED();
}
