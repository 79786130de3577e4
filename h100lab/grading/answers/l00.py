"""Exercise set 0 (chapter 0, "How to use this book"): reading numbers off the machine model."""
from __future__ import annotations

from ..registry import exercise


@exercise("0.1", hint="Look at h100lab.specs.H100_SXM: enabled SMs, not the die's physical count.")
def _sm_count():
    from h100lab.specs import H100_SXM

    return H100_SXM.sm_count


@exercise("0.2", hint="Divide the H200's HBM bandwidth by the H100 SXM's (spec field hbm_bandwidth).", rtol=1e-3)
def _bandwidth_ratio():
    from h100lab.specs import H100_SXM, H200_SXM

    return H200_SXM.hbm_bandwidth / H100_SXM.hbm_bandwidth


@exercise("0.3", hint="Dense FP8 throughput of H100 SXM divided by its dense BF16 throughput.", rtol=1e-3)
def _fp8_over_bf16():
    from h100lab.specs import H100_SXM

    return H100_SXM.dense_tflops["fp8"] / H100_SXM.dense_tflops["bf16"]
