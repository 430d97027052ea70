// gemm_bf16_wgmma_splitk.cuh: the schedule of gemm.splitk on sm90 (bundle
// sm90.wgmma.tma): one producer warpgroup issues TMA loads of A and B tiles
// into a 4-stage ring; two consumer warpgroups run wgmma m64n128k16 over
// each K tile of 64, accumulating in registers.  K is split into split_k
// slices aligned to tile_k; slice s writes its fp32 partial to workspace
// row s, and a second kernel sums the partials in slice order.
#pragma once

namespace sm90 {

struct WgmmaSplitKParams {
    int M, N, K;
    int split_k;     // K slices (numerics param)
    int tile_k;      // 64: the K tile of one pipeline stage
    const void *a;   // [M, K] bf16, row-major
    const void *b;   // [N, K] bf16, row-major (B^T)
    float *partial;  // [split_k, M, N] fp32 workspace
};

// Slice s covers K tiles [s * T / split_k, (s + 1) * T / split_k), T = K / tile_k.
__host__ __device__ inline int slice_begin(const WgmmaSplitKParams &p, int s)
{
    int tiles = p.K / p.tile_k;
    return s * tiles / p.split_k * p.tile_k;
}

}  // namespace sm90
