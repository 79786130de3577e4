// h100lab/partition.cuh — how a copy kernel's CTAs share n_all equal tiles of a buffer (lessons 3 and 5).
//
// Two partitions, both covering every tile exactly once:
//   chunked      CTA b copies one contiguous run of ceil(n_all / gridDim.x) tiles (the last runs may be short or
//                empty);
//   interleaved  CTA b copies tiles b, b + gridDim.x, b + 2·gridDim.x, ... (grid-stride).
// Tile i of a CTA is tile first + i * step of the buffer, for i < n.
#pragma once

struct TileRange {
    long long first, step, n;
};

__device__ __forceinline__ TileRange cta_tiles(long long n_all, long long grid, long long b, bool chunked) {
    TileRange r;
    if (chunked) {
        const long long per = (n_all + grid - 1) / grid;
        r.first = b * per;
        const long long last = r.first + per < n_all ? r.first + per : n_all;
        r.n = last > r.first ? last - r.first : 0;
        r.step = 1;
    } else {
        r.first = b;
        r.step = grid;
        r.n = b < n_all ? (n_all - 1 - b) / grid + 1 : 0;
    }
    return r;
}
