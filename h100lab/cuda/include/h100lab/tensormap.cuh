// h100lab/tensormap.cuh -- the CUtensorMap type for kernels compiled with NVRTC.
//
// NVRTC declares no CUDA driver types, and cuda.h cannot be included in device code compiled with
// NVRTC. A tensor map is an opaque 128-byte object (PTX ISA 5.5.8 "Tensormap"; CUDA Driver API
// "CUtensorMap": 16 64-bit words, 64-byte alignment required). This is the same layout as cuda.h's
// CUtensorMap_st. Pass it to a kernel by value as
//     extern "C" __global__ void k(const __grid_constant__ CUtensorMap map, ...)
// (CUDA Programming Guide, "Using TMA to transfer multi-dimensional arrays"), then take its generic
// address with &map for cp.async.bulk.tensor. h100lab.cuda.encode_tiled makes the 128 bytes on the host
// and h100lab.cuda.launch copies them into the parameter buffer.
#pragma once
#ifndef CU_TENSOR_MAP_NUM_QWORDS
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {
    alignas(64) unsigned long long opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");
#endif
