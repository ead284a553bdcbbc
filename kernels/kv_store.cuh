// kv_store.cuh — one row's new key and value into its stream's cache slot pos % cap (a sliding layer's ring
// keeps the last cap positions; a full layer's cap is the context), shared by kv_store_kernel and the
// attention merge, which stores them in the same launch. Rows older than the last cap positions of their item
// would be overwritten within the same item and are skipped. Piece i of the row (16 bytes, or one element
// where kvd is not a multiple of 8) is copied by thread `first` + k * `step` of the caller's threads.
#pragma once

#include "common.cuh"
#include "kernels.h"

// Where row m's key and value go in the caches (element offset of the slot), or -1 for a row to skip.
__device__ __forceinline__ long long kv_slot(const struct kern_kv_new &kv, const struct kern_row &m)
{
    int last = m.pos0 + (m.item_end - m.base) - 1;
    if (m.pos <= last - kv.cap) return -1;
    return ((long long)m.stream * kv.cap + m.pos % kv.cap) * kv.kvd;
}

__device__ __forceinline__ void kv_store_row(const struct kern_kv_new &kv, int r, int first, int step)
{
    const long long dst = kv_slot(kv, kv.meta[r]);
    const size_t src = (size_t)r * kv.kvd;
    int kvd = kv.kvd;
    if (dst < 0) return;
    if (kvd % 8 == 0) {
        for (int i = first; i < kvd / 8; i += step) {
            reinterpret_cast<uint4 *>(kv.cache_k + dst)[i] = reinterpret_cast<const uint4 *>(kv.k_new + src)[i];
            reinterpret_cast<uint4 *>(kv.cache_v + dst)[i] = reinterpret_cast<const uint4 *>(kv.v_new + src)[i];
        }
        return;
    }
    for (int i = first; i < kvd; i += step) {
        kv.cache_k[dst + i] = kv.k_new[src + i];
        kv.cache_v[dst + i] = kv.v_new[src + i];
    }
}
