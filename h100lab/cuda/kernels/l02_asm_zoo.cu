// Used by: lesson 2 (chapters/02-clusters-ptx.md "A bug zoo of asm statements", h100lab/measure/l02.py
// --only asm, which also disassembles this file for data/l02/l02_asm_zoo.sass).
// Proves: the three parts of an asm statement that the compiler trusts blindly — `volatile`, the "memory"
// clobber and the constraint's modifier — each change the PTX NVRTC emits (the GCC-style rules of the CUDA
// "Inline PTX Assembly" guide, §"Constraints" and §"Incorrect PTX"). Each bug has its corrected twin:
//
//   count_*      every thread adds 1 to *counter with atom.global.add and ignores the old value. Without
//                `volatile` an asm statement whose outputs are unused is dead code: NVRTC deletes it, and the
//                counter stays 0 (count_dead). count_live says `volatile` (and "memory").
//   reread_*     a thread adds 1 to p[t] with an atom in inline PTX (which returns the old value), then reads
//                p[t] in C++ and stores new - old (1). Without the "memory" clobber the compiler may assume the
//                statement touched no memory and reuse a read of p[t] made before it: the difference is 0
//                (reread_stale).
//   accumulate_* acc += x in inline PTX. Declared "=r" (write-only), acc's old value is never loaded into the
//                register the statement reads: the sum starts from whatever that register holds
//                (accumulate_write_only). "+r" (read-write) is right (accumulate_read_write).
// The fourth bug, an operand of the wrong width, does not compile at all (the chapter shows NVRTC's and
// ptxas's messages), so it has no kernel here.
extern "C" __global__ void count_dead(unsigned* counter) {
    unsigned old;
    asm("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter));
}

extern "C" __global__ void count_live(unsigned* counter) {
    unsigned old;
    asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
}

extern "C" __global__ void reread_stale(unsigned* p, unsigned* out) {
    unsigned* q = p + threadIdx.x;
    unsigned before = *q, old;
    asm("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(q));
    out[threadIdx.x] = 1000u * (*q - old) + (old - before);   // 1000 when right: new - old = 1, old = before
}

extern "C" __global__ void reread_fresh(unsigned* p, unsigned* out) {
    unsigned* q = p + threadIdx.x;
    unsigned before = *q, old;
    asm("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(q) : "memory");
    out[threadIdx.x] = 1000u * (*q - old) + (old - before);   // 1000 when right: new - old = 1, old = before
}

extern "C" __global__ void accumulate_write_only(const int* x, int* acc) {
    int a = acc[threadIdx.x];
    asm("add.s32 %0, %0, %1;" : "=r"(a) : "r"(x[threadIdx.x]));
    acc[threadIdx.x] = a;
}

extern "C" __global__ void accumulate_read_write(const int* x, int* acc) {
    int a = acc[threadIdx.x];
    asm("add.s32 %0, %0, %1;" : "+r"(a) : "r"(x[threadIdx.x]));
    acc[threadIdx.x] = a;
}
