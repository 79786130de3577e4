// Used by: lesson 7 (WGMMA part 2: 2:4 sparsity), h100lab/measure/l07.py, tests/test_l07_emu.py, "On real hardware"
// of chapters/07-wgmma-fp8-sparsity.md.
// Proves: what wgmma.mma_async.sp computes (PTX ISA 9.7.15.6) for every sparse type — f16 (f16 and f32 D), bf16,
// tf32, the four fp8 pairings, s8/u8 — with A packed to K/2 through a descriptor (SS) or in registers (RS), the
// per-thread sp-meta registers given by the host (valid metadata, metadata only in the lanes sp-sel names with
// garbage elsewhere, and invalid codes), and each sparsity selector a type allows. The host builds the shared-memory
// image (packed A, dense B), descriptors relative to the image, C, the sp-meta registers and (RS) the A registers;
// each CTA runs `steps` chained sparse wgmmas and writes every thread's raw D registers. Compared bit for bit with
// h100lab.tensorcore.sparsity by h100lab/validation/l07.py.
// This file: the tf32 and register-A (RS) forms, apart so that a JIT refusal of one cannot lose the others.
// The kernels are instances of one template, sparse_probe<Acc, NREG>() of
// h100lab/wgmma_probe.cuh (the same probe as
// l06_wgmma_probe.cu, plus the sp-meta register): it is written once and takes the form's wgmma as a function.
// Each entry point below is an extern "C" wrapper that names its instruction, sparsity selector
// and immediates (SPARSE_SS: A and B through descriptors; SPARSE_RS: A from four registers); the entry points are
// the forms of SPARSE_FORMS in h100lab/measure/l07.py (sparse_module() says which file); edit both together.

#include <h100lab/wgmma_probe.cuh>

// The entry points: accumulator type and registers, instruction, sp-sel, immediates after scale-d.
SPARSE_ENTRY sp_ss_n64_f32_tf32_s0(SPARSE_PARAMS)
{ SPARSE_SS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 0, ", 1, 1"); }
SPARSE_ENTRY sp_ss_n64_f32_tf32_s1(SPARSE_PARAMS)
{ SPARSE_SS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 1, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_f32_bf16_s0(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16", 0, ", 1, 1, 0"); }
SPARSE_ENTRY sp_rs_n64_f32_tf32_s1(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k16.f32.tf32.tf32", 1, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_f32_e4m3_e4m3_s0(SPARSE_PARAMS)
{ SPARSE_RS(float, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3", 0, ", 1, 1"); }
SPARSE_ENTRY sp_rs_n64_s32_s8_s8_s0(SPARSE_PARAMS)
{ SPARSE_RS(unsigned, 32, "wgmma.mma_async.sp.sync.aligned.m64n64k64.s32.s8.s8", 0, ""); }
