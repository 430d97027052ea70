// rope_qkv_epilogue.cuh: rotary position embedding applied to q and k in
// the epilogue of the QKV GEMM (llama3-8b: 32 query heads, 8 KV heads of
// 128, rope theta 500000).  Each pair (x[i], x[i + 64]) of a head is
// rotated by angle pos * theta^(-i / 64) with correctly rounded sin/cos in
// fp32, then rounded once to bf16.
#pragma once

namespace sm90 {

struct RopeEpilogueParams {
    int num_tokens;
    const int *positions;  // [num_tokens]
    float theta;           // 500000
};

}  // namespace sm90
