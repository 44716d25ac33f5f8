"""A goodness-of-fit test for "used in proportion to weight", stdlib only.

CRUSH draws pseudo-randomly, so a share measured on N PGs is only an estimate:
a fixed band (say 0.8-1.3 of the expected share) fails small samples and tiny
shares for no reason (256 PGs x 3 replicas expect 2 replicas on a 0.3% share;
seeing 3 is ratio 1.5 and perfectly normal).  The check here asks instead how
likely the observed counts are if the weights hold (Pearson's chi-square), and
fails only below a p-value that chance essentially never reaches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# A false alarm once in a million verifications; a real defect (a domain that
# gets nothing, or double its share) reaches this with a few hundred PGs.
P_FAIL = 1e-6
MIN_EXPECTED = 5.0  # Pearson's rule: categories expecting fewer are pooled


def _gamma_q(a: float, x: float) -> float:
    """Regularized upper incomplete gamma Q(a, x) (series / continued fraction)."""
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def chi2_sf(statistic: float, dof: int) -> float:
    """P(X >= statistic) for a chi-square variable with ``dof`` degrees of freedom."""
    if dof <= 0:
        return 1.0
    return _gamma_q(dof / 2.0, statistic / 2.0)


@dataclass(frozen=True)
class FitResult:
    samples: int
    categories: int  # after pooling the small ones
    statistic: float
    p_value: float
    worst: str  # the category furthest from its expectation, for the message
    worst_observed: int
    worst_expected: float

    @property
    def ok(self) -> bool:
        return self.p_value >= P_FAIL


def proportional_fit(observed: Mapping[str, int], weights: Mapping[str, float]) -> FitResult:
    """Pearson's test that ``observed`` counts follow ``weights`` (same keys)."""
    total_weight = sum(w for w in weights.values() if w > 0)
    n = sum(observed.values())
    keys: Sequence[str] = sorted(k for k, w in weights.items() if w > 0)
    if n == 0 or total_weight <= 0 or not keys:
        return FitResult(n, 0, 0.0, 1.0, "", 0, 0.0)
    expected = {k: n * weights[k] / total_weight for k in keys}
    outside = n - sum(observed.get(k, 0) for k in keys)  # counts on zero-weight keys
    pooled_obs: dict[str, float] = {}
    pooled_exp: dict[str, float] = {}
    small_obs = small_exp = 0.0
    for k in keys:
        if expected[k] < MIN_EXPECTED:
            small_obs += observed.get(k, 0)
            small_exp += expected[k]
        else:
            pooled_obs[k] = observed.get(k, 0)
            pooled_exp[k] = expected[k]
    if small_exp > 0:
        pooled_obs["(small)"] = small_obs
        pooled_exp["(small)"] = small_exp
    statistic = sum((pooled_obs[k] - pooled_exp[k]) ** 2 / pooled_exp[k] for k in pooled_exp)
    if outside:
        # anything on a zero-weight category is impossible under the hypothesis
        return FitResult(n, len(pooled_exp), math.inf, 0.0, "(weight 0)", outside, 0.0)
    worst = max(pooled_exp, key=lambda k: abs(pooled_obs[k] - pooled_exp[k]) / math.sqrt(
        pooled_exp[k]))
    return FitResult(n, len(pooled_exp), statistic, chi2_sf(statistic, len(pooled_exp) - 1),
                     worst, int(pooled_obs[worst]), pooled_exp[worst])
