"""Measurement scripts, one per lesson (``python -m h100lab.measure.lNN``), writing datasets to data/."""
