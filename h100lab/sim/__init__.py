"""A discrete-event simulator of SMs: warps are processes, the TMA unit, LSUs, tensor cores and HBM
are resources, every number comes from one calibrated :class:`~h100lab.sim.timing.Timing` table, and
every run records a trace in the :mod:`h100lab.sync.trace` format (drawn by
:mod:`h100lab.viz.timeline`, checked by :mod:`h100lab.sync.hazards`).

Modules: ``engine`` (clock, processes, events), ``resources`` (bandwidth pipes), ``timing`` (the
table and its calibration), ``machine`` (GPU / SM / Warp and the instruction methods),
``pipeline`` (the producer/consumer pipeline of lesson 3 and its closed form), ``programs``
(small producer/consumer programs with removable synchronisation, for the hazard lab), ``stream`` (the TMA
streaming pipeline of ``l03_stream.cu`` and its closed form, for memory model 2 of ``timing``).
"""
from .engine import Deadlock, Engine, Event, Process, SimulationError
from .machine import GPU, SM, SimBarrier, Warp
from .resources import Pipe, reserve_path
from .timing import H200_ESTIMATES, Param, Timing, calibrate, default_timing

__all__ = ["Engine", "Event", "Process", "Deadlock", "SimulationError", "GPU", "SM", "Warp", "SimBarrier",
           "Pipe", "reserve_path", "Timing", "Param", "H200_ESTIMATES", "default_timing", "calibrate"]
