"""Calibrate on part, validate on the rest: splits, a robust least-squares fitter, agreement statistics.

Plain NumPy (no SciPy): the book's package must not grow a dependency for one fit.

* :class:`Split` — a *documented* rule that puts each record in the calibration set or the held-out set
  (a predicate on the record's configuration, or :func:`hash_split` for a fixed pseudo-random fraction);
  the rule's text goes into every fitted parameter's source.
* :func:`least_squares` — Levenberg–Marquardt on residuals, parameters fitted in log space (every timing
  constant is positive) within bounds, numerical Jacobian, and a soft-L1 loss (iteratively re-weighted) so
  that a few runs the model cannot explain do not drag the rest: the goal is *most runs within ±10 %*, not
  the smallest mean square.
* :func:`agreement` — how many (predicted, measured) pairs agree within a relative tolerance, the median and
  worst error, and the worst cases.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

__all__ = ["Split", "hash_split", "FitParam", "LeastSquaresResult", "least_squares", "Agreement", "agreement",
           "log_ratio", "log_ratios"]


@dataclass(frozen=True)
class Split:
    """A documented calibration/held-out rule: ``calibrate(record)`` is True for the calibration set."""

    name: str
    description: str
    calibrate: Callable[[dict], bool]

    def apply(self, records: Iterable[dict]) -> tuple[list[dict], list[dict]]:
        """``(calibration, held_out)``, each in the records' order."""
        cal, held = [], []
        for r in records:
            (cal if self.calibrate(r) else held).append(r)
        return cal, held


def hash_split(name: str, key: Callable[[dict], Any], fraction: float, salt: str = "h100lab") -> Split:
    """A split that calibrates on a fixed pseudo-random ``fraction`` of the configurations: a record goes to the
    calibration set when the SHA-256 of ``salt`` and ``key(record)`` falls in the first ``fraction`` of the
    range (deterministic, independent of the record order and of the other records)."""
    if not 0 < fraction < 1:
        raise ValueError("fraction must be in (0, 1)")

    def pick(r: dict) -> bool:
        h = hashlib.sha256(f"{salt}:{key(r)!r}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2 ** 64 < fraction

    return Split(name, f"the configurations whose SHA-256 (salt {salt!r}) falls in the first {fraction:.0%} of the "
                       "range", pick)


@dataclass(frozen=True)
class FitParam:
    """One fitted constant: its name, starting value and bounds (all positive: fitted in log space)."""

    name: str
    init: float
    lo: float
    hi: float

    def __post_init__(self):
        if not 0 < self.lo <= self.init <= self.hi:
            raise ValueError(f"{self.name}: need 0 < lo ≤ init ≤ hi, got {self.lo}, {self.init}, {self.hi}")


@dataclass
class LeastSquaresResult:
    """The fitted values (by name), the final residuals, the loss, iterations and whether it converged."""

    values: dict
    residuals: np.ndarray
    loss: float
    iterations: int
    converged: bool
    history: list = field(default_factory=list)


def _soft_l1(r: np.ndarray, f: float) -> float:
    z = (r / f) ** 2
    return float(np.sum(2 * f * f * (np.sqrt(1 + z) - 1)))


def least_squares(residuals: Callable[[dict], np.ndarray], params: Sequence[FitParam], *, f_scale: float = 0.05,
                  max_iter: int = 60, tol: float = 1e-7, step: float = 1e-4) -> LeastSquaresResult:
    """Minimise the soft-L1 loss ``Σ 2f²(√(1 + (r/f)²) − 1)`` of ``residuals(values)`` (a 1-D array; ``values``
    a dict name → value) over ``params``, in log space, within their bounds (Levenberg–Marquardt with a
    forward-difference Jacobian, re-weighted every iteration: weight ``(1 + (r/f)²)^(-1/4)`` per residual).
    ``f_scale``: the residual size where the loss turns from quadratic to linear (0.05 for log-ratios: 5 %)."""
    if not params:
        raise ValueError("nothing to fit")
    names = [p.name for p in params]
    lo = np.log([p.lo for p in params])
    hi = np.log([p.hi for p in params])
    x = np.log([p.init for p in params])

    def vals(v):
        return {n: float(x) for n, x in zip(names, np.exp(v))}

    r = np.asarray(residuals(vals(x)), dtype=float)
    if r.ndim != 1 or not r.size:
        raise ValueError("residuals must be a non-empty 1-D array")
    loss = _soft_l1(r, f_scale)
    lam = 1e-2
    hist = [loss]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        wts = (1 + (r / f_scale) ** 2) ** -0.25
        J = np.empty((r.size, x.size))
        for j in range(x.size):
            xj = x.copy()
            h = step if xj[j] + step <= hi[j] else -step
            xj[j] += h
            J[:, j] = (np.asarray(residuals(vals(xj)), dtype=float) - r) / h
        Jw = J * wts[:, None]
        rw = r * wts
        A = Jw.T @ Jw
        g = Jw.T @ rw
        improved = False
        for _ in range(12):
            try:
                dx = -np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            xn = np.clip(x + dx, lo, hi)
            rn = np.asarray(residuals(vals(xn)), dtype=float)
            ln = _soft_l1(rn, f_scale)
            if ln < loss:
                improved = True
                rel = (loss - ln) / max(loss, 1e-300)
                x, r, loss = xn, rn, ln
                lam = max(lam / 3, 1e-9)
                break
            lam *= 4
        hist.append(loss)
        if not improved or rel < tol:
            converged = True
            break
    return LeastSquaresResult(vals(x), r, loss, it, converged, hist)


def log_ratio(pred: float, meas: float) -> float:
    """``log(pred / meas)``: the residual of a relative comparison (≈ the relative error when small)."""
    if not (pred > 0 and meas > 0):
        return math.inf
    return _log(pred / meas)


def _log(q: float) -> float:
    """``math.log`` with a quotient that underflowed to 0 (a positive prediction over 10³⁰⁸ times smaller than its
    measurement) read as −inf, the limit, instead of a domain error."""
    return math.log(q) if q > 0 else -math.inf


def log_ratios(pred, meas) -> np.ndarray:
    """:func:`log_ratio` of each pair of two equally long sequences, as one array, bit for bit: the divisions in
    NumPy (exact), the logarithms through :func:`math.log` (NumPy's SIMD ``log`` may round differently in the last
    bit); ``inf`` where a value is not positive."""
    p = np.asarray(pred, dtype=float)
    m = np.asarray(meas, dtype=float)
    if p.shape != m.shape or p.ndim != 1:
        raise ValueError("log_ratios: two 1-D sequences of the same length")
    ok = (p > 0) & (m > 0)
    with np.errstate(over="ignore", under="ignore"):      # as Python's float division: inf, 0, no warning
        q = np.where(ok, p, 1.0) / np.where(ok, m, 1.0)
    out = np.fromiter(map(_log, q.tolist()), float, q.size)
    out[~ok] = math.inf
    return out


@dataclass(frozen=True)
class Agreement:
    """How well predictions match measurements: ``n`` pairs, ``within`` of them inside ``±tol`` (relative to
    the measurement), the median and worst relative error, and the worst cases (label, predicted, measured)."""

    metric: str
    tol: float
    n: int
    within: int
    median_error: float
    worst_error: float
    worst: list

    @property
    def fraction(self) -> float:
        return self.within / self.n if self.n else float("nan")

    def meets(self, goal: float) -> bool:
        """Whether at least ``goal`` (e.g. 0.9) of the pairs agree."""
        return self.n > 0 and self.fraction >= goal

    def __str__(self) -> str:
        return (f"{self.metric}: {self.within}/{self.n} within ±{self.tol:.0%} ({self.fraction:.0%}); median error "
                f"{self.median_error:.1%}, worst {self.worst_error:.1%}")


def agreement(metric: str, pairs: Sequence[tuple[Any, float, float]], tol: float = 0.10, keep: int = 5) -> Agreement:
    """Agreement of ``pairs`` ``(label, predicted, measured)`` within relative tolerance ``tol``."""
    errs = []
    for lab, p, m in pairs:
        e = abs(p / m - 1) if m else math.inf
        errs.append((e, lab, p, m))
    if not errs:
        return Agreement(metric, tol, 0, 0, float("nan"), float("nan"), [])
    e = np.array([x[0] for x in errs])
    worst = sorted(errs, key=lambda x: -x[0])[:keep]
    return Agreement(metric, tol, len(errs), int(np.sum(e <= tol)), float(np.median(e)), float(e.max()),
                     [{"case": lab, "predicted": round(p, 3), "measured": round(m, 3), "error": round(err, 4)}
                      for err, lab, p, m in worst])
