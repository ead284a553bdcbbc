// kv_store — after attention, each row's new key and value join its stream's cache (kv_store.cuh). Passes
// whose attention leaves partials store them in the merge kernel instead (attention.cu).
#include "kv_store.cuh"

__global__ void kv_store_kernel(struct kern_kv_new kv)
{
    kern_dep_launch();
    kern_dep_wait();
    kv_store_row(kv, blockIdx.x, threadIdx.x, blockDim.x);
}

extern "C" void kern_kv_store(const uint16_t *k_new, const uint16_t *v_new, const struct kern_row *rows_meta, int rows,
                              int kvd, int cap, uint16_t *cache_k, uint16_t *cache_v, kern_stream s)
{
    if (rows == 0) return;
    struct kern_kv_new kv = {k_new, v_new, rows_meta, kvd, cap, cache_k, cache_v};
    kern_launch(kv_store_kernel, dim3(rows), dim3(256), 0, s, kv);
    KERN_LAUNCHED();
}
