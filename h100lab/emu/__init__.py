"""h100lab.emu: run the book's CUDA C++ kernels with no GPU (NVRTC → PTX, executed on the machine model).

(Work in progress: the package's API is filled in by the emulator modules.)
"""
