// kv_store — after attention, each row's new key and value join its stream's cache (kv_store.cuh). Passes
// whose attention leaves partials store them in the merge kernel instead (attention.cu).
#include "kv_store.cuh"

__global__ void kv_store_kernel(struct kern_kv_new kv)
{
    kern_dep_launch();
    kern_dep_wait();
    kv_store_row(kv, blockIdx.x, threadIdx.x, blockDim.x);
}

extern "C" void kern_kv_store(const struct kern_kv_new *kv, int rows, kern_stream s)
{
    if (rows == 0) return;
    kern_launch(kv_store_kernel, dim3(rows), dim3(256), 0, s, *kv);
    KERN_LAUNCHED();
}
