"""Write a registered predictions file (``benchmarks/predictions/``) with the git commit it was written at: one
helper for the ``predict_*.py`` scripts, whose files the tests hold against the runs committed after them."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_predictions(file: str, payload: dict) -> Path:
    """Write ``payload`` with ``written_at_commit`` (``git rev-parse HEAD`` here, None outside a git checkout) first
    to ``benchmarks/predictions/<file>``; returns the path."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    out = ROOT / "benchmarks" / "predictions" / file
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"written_at_commit": head.stdout.strip() if head.returncode == 0 else None,
                               **payload}, indent=1) + "\n")
    return out
