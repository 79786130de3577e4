"""Shared memory and global memory: banks, coalescing, state spaces, swizzles (one module each)."""
