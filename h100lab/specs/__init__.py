"""Device specifications of the Hopper GPUs the book teaches: H100 SXM5, H100 PCIe, H200 SXM.

``H100_SXM``, ``H100_PCIE`` and ``H200_SXM`` are immutable :class:`DeviceSpec` objects; every number
names its source (``spec.source("l2_bytes")``). :func:`from_device` builds a spec from a real GPU's
``cudaDeviceProp`` values; :func:`compare` lists where a device and a spec differ.
"""
from .device import DTYPES, SPARSE_DTYPES, DeviceSpec
from .products import (ALL, FLOP_PER_SM_PER_CLOCK, H100_PCIE, H100_SXM, H200_SXM,
                       SIMT_FLOP_PER_SM_PER_CLOCK, peak_tflops)
from .fromdevice import PROPERTY_FIELDS, compare, from_device, from_properties, get, table

__all__ = ["DeviceSpec", "DTYPES", "SPARSE_DTYPES", "H100_SXM", "H100_PCIE", "H200_SXM", "ALL",
           "FLOP_PER_SM_PER_CLOCK", "SIMT_FLOP_PER_SM_PER_CLOCK", "peak_tflops", "from_device",
           "from_properties", "compare", "get", "table", "PROPERTY_FIELDS"]
