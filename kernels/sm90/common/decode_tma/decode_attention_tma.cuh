// decode_attention_tma.cuh: paged decode attention on sm90 with TMA page
// gathers.  Numerics of paged_decode_attention.v2: each split of the KV
// positions reduces q.k in one order, its softmax sum and p.v likewise,
// and the splits are combined in split order.  Only the loads differ from
// the family's template: a producer warp gathers the pages of a split with
// cp.async.bulk.tensor into shared memory while the other warps compute.
#pragma once

namespace sm90 {

struct DecodeTmaParams {
    int num_seqs, num_heads, num_kv_heads, head_dim;
    int page_size, max_pages, split;  // split: KV positions per split
    const int *page_table;            // [num_seqs, max_pages]
    const int *seq_lens;              // [num_seqs]
};

}  // namespace sm90
