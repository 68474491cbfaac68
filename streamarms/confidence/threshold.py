r"""An anytime-valid interval for the k-sigma threshold ``theta = mu + k sigma`` of n arms' means.

``mu`` and ``sigma`` are the population mean and standard deviation of the arms' true means
``y_1..y_n``. The interval tightens like ``sqrt((1 + k^2) / (n m))`` with m samples per arm, i.e. with
the number of arms, where a box of arm intervals (or McDiarmid with the worst-case sensitivity of
Zhuang et al., NeurIPS 2017) does not shrink with n at all. Sources: Howard, Ramdas, McAuliffe,
Sekhon, *Time-uniform, nonparametric, nonasymptotic confidence sequences*, Ann. Statist. 49(2), 2021
(the method of mixtures: the discrete-mixture sub-gamma boundary of :mod:`.mixture`, with Kaufmann &
Koolen, JMLR 2021; Thm 1, the stitched boundary of :mod:`.stitched`, for old snapshots); Bennett's /
Bernstein's moment generating function bound for bounded variables; the k-sigma rule of Zhuang, Wang, Wang, NeurIPS 2017.

Derivation
----------
**Reward table.** Arm i's rewards ``X_{i,1}, X_{i,2}, ...`` are iid with mean ``y_i`` and independent
across arms; a sampling rule that decides from past rewards only reads a prefix of each row. So any
statement about the table holding for all prefixes at once holds under adaptive sampling and at any
stopping time.

**Threshold track.** Let ``m`` be a count every arm has reached and ``yhat_i = S_i(m) / m`` the mean of
arm i's *first m* rewards, ``e_i = yhat_i - y_i``, ``theta(x) = mean(x) + k sd(x)`` (population sd).
With ``z_i = (y_i - mu) / sigma`` (so ``sum z = 0``, ``sum z^2 = n``), ``grad sd(y) = z / n`` and::

    theta(yhat) - theta(y) = L + k R,   L = sum_i w_i e_i,   w_i = (1 + k z_i) / n,
    sum_i w_i^2 = (1 + k^2) / n  exactly,   |w_i| <= (1 + k sqrt(n - 1)) / n  (|z_i| <= sqrt(n - 1)).

``R = sd(yhat) - sd(y) - <z/n, e> >= 0`` because sd is convex (``z/n`` is a subgradient; if sigma = 0 take
any subgradient, ``||z||^2 <= n``). Upper bounds: with ``P`` the centring projection, ``sd(x) =
||P x|| / sqrt(n)`` and ``||a + b|| <= ||a|| + <a/||a||, b> + ||b||^2 / (2 ||a||)`` (square both sides:
the difference is a square), so ``R <= ||P e||^2 / (2 n sigma) <= ||e||^2 / (2 n sigma)``; and by the
triangle and Cauchy-Schwarz inequalities ``R <= 2 ||e|| / sqrt(n)``.

Hence ``theta(y) in [theta(yhat) - |L| - k Rmax, theta(yhat) + |L|]``; for the lower threshold
``mu - k sigma`` (weights ``(1 - k z_i) / n``, same sum of squares, sd enters with ``-k``) it is
``[theta_-(yhat) - |L'|, theta_-(yhat) + |L'| + k Rmax]``.

**Linear term.** ``m L = sum_{j <= m} D_j`` with ``D_j = sum_i w_i (X_{i,j} - y_i)``: one row ("round") of
the table per j, iid in j, mean 0, a sum of n independent terms ``T_i`` with ``|T_i| <= b =
max|w_i| (high - low)`` and ``Var T_i = w_i^2 v_i``. Bennett's bound ``log E exp(l T) <= Var(T) (e^{lb} -
1 - lb) / b^2 <= Var(T) l^2 / (2 (1 - l b / 3))`` makes ``sum_j D_j`` (and ``-sum_j D_j``) sub-gamma with
variance process ``m V``, ``V = sum_i w_i^2 v_i``, and scale ``c = b / 3``. A uniform boundary ``u`` for
sub-gamma processes (**Boundary** below) gives ``P(exists m: |sum_{j<=m} D_j| >= u(m V)) <= alpha_L``
(``alpha_L / 2`` per tail). V is unknown but fixed,
and ``u`` is increasing in its argument, so on the event that every arm's confidence sequence holds we
may evaluate it at ``m Vbar`` with ``V <= Vbar = (1 + k^2)/n * max_i vbar_i``, ``vbar_i`` the largest
variance a reward law on ``[low, high]`` with mean in arm i's interval can have (Bhatia-Davis:
``(mu - low)(high - mu)``). ``v_min`` is fixed at construction. Each ``T_i`` is also sub-Gaussian with
proxy ``w_i^2 s_i`` (Hoeffding's lemma: ``s_i = (high - low)^2 / 4``; Bernoulli: the Kearns-Saul proxy of
``y_i``, at most its value at the point of arm i's interval nearest 1/2), so ``D_j`` is sub-Gaussian with
proxy ``G = sum_i w_i^2 s_i <= Gbar`` (``(1 + k^2)/n`` times the largest arm bound, or the same knapsack
as ``Vbar`` with the proxies' bounds): the boundary uses, for each lambda of its mixture, the smaller of
the two CGF bounds (:mod:`.mixture`, "Two bounds of the CGF"; no extra probability). Sub-Gaussian arms: ``D_j`` is sub-Gaussian
with variance proxy ``(1 + k^2) sigma_X^2 / n`` exactly, ``c = 0``.

**Remainder.** Every arm's sequence holds at every count, in particular at m: ``|e_i| <= r_i(m) =
max(yhat_i - lo_i(m), hi_i(m) - yhat_i)`` with ``lo_i(m), hi_i(m)`` arm i's interval when it reached m, so
``||e||^2 <= E2 = sum_i r_i(m)^2`` (no extra probability). The true sigma is bounded below by
``sd(yhat) - sqrt(E2 / n)`` and by the box bound below. ``Rmax = min(E2 / (2 n sigma_lo), 2 sqrt(E2 / n))``
decays like 1/m.

**Remainder, second bound (its own probability).** ``E2`` pays each arm's ``log(1/alpha_arm)``; for
many arms ``||e||^2`` concentrates near its mean ``sum v_i / m``. With ``Z_m = S(m) - m y`` (a vector
martingale with independent sub-Gaussian coordinates, proxy ``m s2``, ``s2 = (high - low)^2 / 4`` or
``sigma_X^2``), ``exp(c ||Z_m||^2)`` is a nonnegative submartingale and ``E exp(c Z_i^2) <= (1 - 2 c M
s2)^(-1/2)`` (Gaussian linearisation of the sub-Gaussian MGF), so Doob's maximal inequality gives, for
``u = 2 c M s2 in (0, 1)``, ``P(max_{m <= M} ||Z_m||^2 >= x) <= alpha_j`` with
``x = 2 M s2 [ (n/2) log(1/(1 - u)) + log(1/alpha_j) ] / u``. Over the epochs ``M_j = 2^j``
(``alpha_j = alpha_Q / ((j + 1)(j + 2))``, summing to ``alpha_Q``; u picked per epoch from a fixed grid,
a function of n and alpha_j only) this bounds ``||e(m)||^2 = ||Z_m||^2 / m^2`` at every m at once: about
``s2 (n + 2 sqrt(n log(1/alpha_j))) / m`` instead of ``~ 2 n s2 log(1/alpha_arm) / m``. ``E2`` is the
smaller of the two. The threshold's share is split: ``Q_SHARE = 1/4`` of it (``alpha_Q``) here, ``B_SHARE`` to the bias-free
lower side below, the rest to the linear term(s): this bound depends on ``log(1/alpha_Q)`` only next to ``n/2``, the linear term on
``sqrt(log(1/alpha_L))`` alone.

**Lower side without the bias (its own probability).** ``sd(yhat)^2`` overshoots ``sigma^2`` by about
``mean(v_i) / m`` (the arms' own noise), and the remainder above pays for that bias with a bound that does
not shrink with n. Remove it instead. With ``s_i^2`` arm i's unbiased sample variance of its first m
rewards, ``A = sd(yhat)^2 - (1/n) sum_i s_i^2 / m`` (observable). Exactly (expand ``sd(y + e)^2``, and
``e_i^2 - s_i^2 / m = 2 U_i / (m (m - 1))`` with ``U_i(m) = sum_{2 <= l <= m} (X_{i,l} - y_i) Z_i(l - 1)``)::

    (sigma + l')^2 = A - B + ebar^2 + l'^2,   l' = (1/n) sum_i z_i e_i,   B = 2 sum_i U_i(m) / (n m (m - 1)).

``M_m = sum_i U_i(m)`` is a martingale over the rows of the table whose increment ``sum_i (X_{i,m} - y_i)
Z_i(m - 1)`` is, given the first m - 1 rows, sub-Gaussian with proxy ``sum_i s_i Z_i(m - 1)^2`` (s_i the
arms' proxies): ``exp(l M_m - l^2 V_m / 2)`` is a supermartingale with the *predictable* variance process
``V_m = sum_{l < m} sum_i s_i Z_i(l)^2``, and the boundary ``u`` (**Boundary** below: a mixture of these
supermartingales, so any adapted V is allowed; Howard et al. 2021) gives ``P(exists m: M_m >= u(V_m)) <= alpha_B``. On the quadratic bound's event
``||Z_l||^2 <= x_j`` for every l of epoch j (x_j with every arm's proxy at
most smax: the same epoch's u, so the same event), so ``V_m <= Vbar_m = smax sum_{l < m} x_{j(l)}`` (smax the
largest arm proxy bound; u is increasing), and ``B <= Bbar = 2 u(Vbar_m) / (n m (m - 1))``, of size
``~ s2 sqrt(log) / (sqrt(n) m)``: it shrinks with n, where the biased remainder does not. If
``sigma + l' >= 0`` then ``theta = mu_hat - L + k (sigma + l') >= mu_hat - |L| + k sqrt(A - Bbar)``. If
``sigma + l' < 0`` then ``0 <= sigma < -l'``, so ``(sigma + l')^2 <= l'^2`` and ``A - B <= 0``: impossible
when ``A > Bbar``. So when ``A > Bbar``, ``theta >= mu_hat - |L| + k sqrt(A - Bbar)`` (and, two-sided,
``mu - k sigma <= mu_hat + |L'| - k sqrt(A - Bbar)``); also ``sigma >= sqrt(A - Bbar) - rms(e)``
(``|l'| <= ||e|| / sqrt(n)``). ``L`` is the linear term above (same event). ``B_SHARE`` of the threshold's
share is spent here.

**Bilinear term, variances.** The increment ``sum_i (X_{i,m} - y_i) Z_i(m - 1)`` is, given the first
m - 1 rows, also a sum of independent terms bounded above by ``b_m = (high - low) max_i |Z_i(m - 1)|`` with
variances ``v_i Z_i(m - 1)^2``: by Bennett's bound (as for the linear term) sub-gamma with variance
``sum_i v_i Z_i(m - 1)^2 <= vmax ||Z_{m-1}||^2`` and scale ``b_m / 3``. On the quadratic bound's event
``||Z_l||^2 <= x_j`` (l in epoch j), so the variance process is at most ``vmax sum_{l < m} x_{j(l)}`` and every
scale up to m at most ``cbar_m = (high - low) sqrt(x_{j(m - 1)}) / 3`` (x_j increases with j). For each
lambda the exponent ``min(psi_cbar(lambda) vmax sum x, lambda^2 smax sum x / 2)`` is at least the sum over the
increments of the smaller of their two CGF bounds (a sum of minima is at most the minimum of the sums; a term
with ``cbar lambda >= 1`` keeps its sub-Gaussian bound), so the discrete mixture of :mod:`.mixture` with both
processes holds at the same ``alpha_B``. ``vmax`` is the largest arm variance bound (Bhatia-Davis on the arm's
interval, the arms' event): for rates near 0 or 1 the variance is several times below the Kearns-Saul proxy
and ``Bbar`` about halves; elsewhere the sub-Gaussian term wins and nothing changes.

**Boundary.** ``u`` is the discrete-mixture boundary of :mod:`.mixture`: a fixed prior (from ``alpha``
and ``v_min`` only) over a geometric grid of lambdas, valid for any sub-gamma process by Ville's
inequality, increasing in ``v`` and in ``c`` (so it may be read at upper bounds ``Vbar``, ``cbar``: the
fixed grid, terms with ``cbar lambda_j >= 1`` left out), ~10% below the stitched boundary of Howard et al.
(Thm 1) over the counts the track reaches. A track restored from a snapshot taken before the mixture keeps
the stitched boundary (``boundary = "stitched"``), so all levels of one run use one boundary and the running
intersection below stays on one event; likewise the bilinear term's bound is the track's setting
(``bilinear``: ``"proxy"``, the default and what a snapshot without the field holds, or ``"variance"``, below;
:class:`~streamarms.policies.anytime.AnytimeKSigma` uses ``"variance"``). The bilinear term uses the same ``u``.

**Box.** Always intersected with the trivially valid box: with arm intervals ``[lo_i, hi_i]``, centres
``c_i`` and half-widths ``h_i``, ``mu in [mean(lo), mean(hi)]`` and ``|sigma - sd(c)| <= rms(h)``.

**Running intersection.** The interval at every level holds on one event, so the track reports the
intersection of the intervals of all levels so far (``upper_level``: the current level's alone).

**Union.** Arm sequences (each at its own alpha), the linear term(s) (``alpha_L``; two-sided:
``alpha_L / 2`` for each threshold), the quadratic bound (``alpha_Q``) and the bilinear one (``alpha_B``) hold together with probability ``>= 1 - sum alpha_i - alpha_L``;
on that event the interval contains theta at every m at once.

**Memory.** :class:`ThresholdTrack` keeps, for each grid level ``g >= m_theta`` of a geometric grid of
counts (every count to 8, then ratio 1.2), additive totals over the arms that reached g: counts, sums of
``yhat``, ``yhat^2``, ``r^2``, ``s_i^2 / g``, the max of ``vbar`` and of the proxies, and the box sums. An arm adds its terms when its count
hits a level (O(1), one interval evaluation); ``m_theta`` is the largest level every arm has reached.
All totals are sums (or a max) over arms, so consumers of one group can merge them.

>>> import random
>>> from streamarms.confidence import BetaBinomialCS
>>> rng = random.Random(1); means = [0.3] * 19 + [0.8]
>>> track = ThresholdTrack(20, k=2.0, alpha=0.05, low=0.0, high=1.0)
>>> arms = [BetaBinomialCS(0.0025) for _ in means]
>>> for _ in range(400):
...     for i, p in enumerate(means):
...         arms[i].update(float(rng.random() < p))
...         if arms[i].n in track.levels:
...             _ = track.record(arms[i].n, arms[i].s, *arms[i].interval())
>>> track.m_theta
370
>>> lo, hi = track.upper(); lo < 0.3 + 2 * 0.109 < hi, round(hi - lo, 3)
(True, 0.151)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .mixture import mixture_boundary
from .restored import check_track

__all__ = ["ThresholdTrack", "grid_levels", "threshold_bounds", "min_sd_over_box", "quadratic_bound", "bilinear_bound"]


def grid_levels(limit: int = 10 ** 12, dense: int = 8, ratio: float = 1.2) -> list[int]:
    """The counts at which arms report to the threshold track: 1..dense, then x ratio (rounded up).

    >>> grid_levels(40)
    [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 18, 22, 27, 33, 40]
    """
    out = list(range(1, dense + 1))
    g = dense
    while g < limit:
        g = max(g + 1, math.ceil(g * ratio))
        if g <= limit:
            out.append(g)
    return out


_LEVELS = grid_levels()


def _stitched_np(v: Any, alpha: float, v_min: float, c: Any) -> Any:
    """:func:`stitched_boundary`, vectorised over ``v`` and ``c`` (numpy arrays or floats)."""
    from .stitched import _A, ETA, S_EXP
    use_v = np.maximum(v, v_min)
    ell = S_EXP * np.log(np.log(ETA * use_v / v_min)) + _A(S_EXP, ETA) + math.log(1.0 / alpha)
    k1 = (ETA ** 0.25 + ETA ** -0.25) / math.sqrt(2.0)
    t2 = (math.sqrt(ETA) + 1.0) / 2.0 * c * ell
    return np.sqrt(k1 * k1 * use_v * ell + t2 * t2) + t2


#: the uniform boundaries the track can use for its sub-gamma terms (module docstring, "Boundary"):
#: ``mixture`` (the default) or ``stitched`` (tracks restored from snapshots taken before the mixture)
BOUNDARIES = {"mixture": mixture_boundary, "stitched": _stitched_np}


def _boundary(name: str) -> Callable[..., Any]:
    try:
        return BOUNDARIES[name]
    except KeyError:
        raise ValueError(f"unknown threshold boundary {name!r}; known: {sorted(BOUNDARIES)}") from None


#: the part of the threshold's share spent on the quadratic bound of the remainder
Q_SHARE = 0.25
#: the part spent on the bilinear term of the bias-free lower side (module docstring)
B_SHARE = 0.25
_U_GRID = np.linspace(0.01, 0.99, 99)


def _epoch(g: Any, alpha_q: float) -> tuple[Any, Any]:
    """Epoch ``M = 2^j`` (``j = ceil(log2 g)``) of count ``g`` and its share ``alpha_j``."""
    j = np.ceil(np.log2(np.maximum(np.asarray(g, dtype=float), 1.0)))
    return 2.0 ** j, alpha_q / ((j + 1.0) * (j + 2.0))


def epoch_u(g: Any, n: int, alpha_q: float) -> Any:
    """The epoch's ``u = 2 c M s_ref`` (module docstring, "Remainder, second bound"): the grid point that
    minimises the bound when every arm has the reference proxy. A function of ``n`` and the epoch only, so
    it can be fixed before the data; arms with smaller proxies then add ``-log(1 - u s_i / s_ref)``.

    >>> round(epoch_u(1000, 50, 0.025), 2)
    0.52
    """
    g = np.asarray(g, dtype=float)
    _, a_j = _epoch(g, alpha_q)
    u = _U_GRID.reshape((-1,) + (1,) * g.ndim)
    f = ((n / 2.0) * -np.log1p(-u) + np.log(1.0 / a_j)) / u
    out = _U_GRID[np.argmin(f, axis=0)]
    return float(out) if np.ndim(out) == 0 else out


def kearns_saul(p: float) -> float:
    """Optimal sub-Gaussian variance proxy of a Bernoulli(p) law (Kearns & Saul, UAI 1998; Berend &
    Kontorovich, Electron. Commun. Probab. 2013): ``(1 - 2p) / (2 log((1 - p) / p))``, 1/4 at p = 1/2,
    0 at p in {0, 1}; symmetric about 1/2 and increasing on [0, 1/2].

    >>> kearns_saul(0.5), round(kearns_saul(0.01), 4), kearns_saul(0.0)
    (0.25, 0.1066, 0.0)
    """
    if p <= 0.0 or p >= 1.0:
        return 0.0
    if abs(p - 0.5) < 1e-9:
        return 0.25
    return (1.0 - 2.0 * p) / (2.0 * math.log((1.0 - p) / p))


def quadratic_bound(g: Any, n: int, s2: float, alpha_q: float, sum_lq: Any = None) -> Any:
    """Anytime bound on ``||e(g)||^2`` (module docstring, "Remainder, second bound").

    ``s2`` is the reference proxy; ``sum_lq`` (optional) ``sum_i -log(1 - u s_i / s2)`` over the arms with
    ``u = epoch_u(g, n, alpha_q)`` and ``s_i <= s2`` bounds of the arms' proxies (default: every ``s_i = s2``).

    >>> b = quadratic_bound(1000, 50, 0.25, 0.025); round(b * 1000 / (50 * 0.25), 2)   # ~ (n + ...) s2 / m
    2.12
    >>> u = epoch_u(1000, 50, 0.025)    # half the arms with proxy s2 / 4
    >>> b2 = quadratic_bound(1000, 50, 0.25, 0.025, 25 * -math.log1p(-u) + 25 * -math.log1p(-u / 4))
    >>> round(b2 * 1000 / (50 * 0.25), 2)
    1.53
    """
    g = np.asarray(g, dtype=float)
    M, a_j = _epoch(g, alpha_q)
    u = np.asarray(epoch_u(g, n, alpha_q), dtype=float)
    if sum_lq is None:
        sum_lq = n * -np.log1p(-u)
    x = 2.0 * M * s2 * (np.asarray(sum_lq, dtype=float) / 2.0 + np.log(1.0 / a_j)) / u
    out = x / (g * g)
    return float(out) if out.ndim == 0 else out


def bilinear_bound(g: Any, n: int, s2: float, smax: Any, alpha_q: float, alpha_b: float,
                   boundary: str = "mixture", vmax: Any = None, span: float | None = None) -> Any:
    """``Bbar``: anytime upper bound on ``B = 2 sum_i U_i(g) / (n g (g - 1))`` (module docstring, "Lower side
    without the bias"), on the quadratic bound's event (``alpha_q``, proxy ``s2``) and its own (``alpha_b``).
    ``smax``: a bound on every arm's proxy. ``inf`` below g = 2.

    ``vmax``, ``span`` (optional, mixture boundary only): a bound on every arm's variance and the rewards'
    range: the increments are then also sub-gamma (module docstring, "Bilinear term, variances"), and the
    boundary uses, for each lambda, the smaller of the two CGF bounds -- much tighter for rates near 0 or 1,
    where the variance is far below the sub-Gaussian proxy; never looser.

    >>> b = bilinear_bound(100, 200, 0.25, 0.25, 0.0125, 0.0125); round(b * 100 * math.sqrt(200) / 0.25, 1)
    8.1
    >>> low = dict(smax=kearns_saul(0.03), vmax=0.03 * 0.97, span=1.0)   # rates <= 0.03: variance 0.029, proxy 0.135
    >>> b_sg = bilinear_bound(5000, 50, 0.25, low["smax"], 0.0125, 0.0125)
    >>> round(bilinear_bound(5000, 50, 0.25, low["smax"], 0.0125, 0.0125, vmax=low["vmax"], span=1.0) / b_sg, 2)
    0.5
    """
    g = np.asarray(g, dtype=float)
    top = int(np.ceil(np.log2(max(float(np.max(g)), 2.0))))
    vsum = np.zeros_like(g)
    for j in range(top + 1):  # counts l in [1, g - 1] of epoch j (l = 1: j = 0; else 2^(j-1) < l <= 2^j)
        lo_l, hi_l = (1.0, 1.0) if j == 0 else (2.0 ** (j - 1) + 1.0, 2.0 ** j)
        cnt = np.clip(np.minimum(g - 1.0, hi_l) - lo_l + 1.0, 0.0, None)
        u_j = epoch_u(hi_l, n, alpha_q)  # every arm's proxy at most smax: the quadratic bound's own event
        lq = n * -np.log1p(-u_j * np.minimum(np.asarray(smax, dtype=float) / s2, 1.0))
        x_j = quadratic_bound(hi_l, n, s2, alpha_q, lq) * hi_l * hi_l  # bound on max ||Z_l||^2 over the epoch
        vsum = vsum + cnt * x_j
    v_bar = np.asarray(smax, dtype=float) * vsum
    if vmax is not None and span is not None and boundary == "mixture":
        # sub-gamma too: variance process <= vmax * vsum, scale span * max ||Z_l|| / 3 (the last epoch's x_j)
        c = span * np.sqrt(x_j) / 3.0
        u = mixture_boundary(np.asarray(vmax, dtype=float) * vsum, alpha_b, n * s2 * s2, c, v_bar)
    else:
        u = _boundary(boundary)(v_bar, alpha_b, n * s2 * s2, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(g >= 2.0, 2.0 * u / (n * g * np.maximum(g - 1.0, 1.0)), np.inf)
    return float(out) if out.ndim == 0 else out


def threshold_bounds(g: Any, n: int, k: float, alpha_lin: float, *, sum_y: Any, sum_y2: Any, sum_r2: Any,
                     vmax: Any, sum_lo: Any, sum_hi: Any, sum_c: Any, sum_c2: Any, sum_h2: Any,
                     span: float | None, sigma_x: float | None, two_sided: bool = False,
                     v_min: float | None = None, sigma_floor: Any = 0.0, sum_lq: Any = None,
                     box: Any = None, sum_w: Any = None, smax: Any = None,
                     boundary: str = "mixture", bilinear: str = "proxy") -> dict[str, Any]:
    """The intervals of the module docstring from the totals at level ``g`` (floats or numpy arrays).

    ``alpha_lin`` is the whole threshold share: ``Q_SHARE`` of it to the quadratic bound, the rest to the
    linear term(s) (split between the two thresholds when two-sided).
    ``sigma_floor``: any other valid lower bound of sigma on the same event (e.g. :func:`min_sd_over_box`).
    ``sum_lq``: the heterogeneous proxies' term of :func:`quadratic_bound` (default: all at ``s2``).
    ``box``: optional ``(lo, hi, vbar)`` arrays (``(..., n)``) of the arms' current intervals and variance
    bounds: the linear term's variance and scale then come from :func:`linear_variance_bound` where
    that is smaller.
    ``sum_w``, ``smax``: ``sum_i s_i^2 / g`` (the arms' unbiased sample variances) and the largest proxy
    bound: with both, the bias-free lower side (module docstring) where it is tighter.
    ``bilinear``: ``"proxy"`` (the proxies alone: the default, as :class:`ThresholdTrack`'s) or ``"variance"``
    (also through ``vmax``, module docstring "Bilinear term, variances": the engine's policies).
    ``span = high - low`` for bounded rewards (``vmax`` = max Bhatia-Davis variance); ``sigma_x`` for
    sub-Gaussian rewards; neither (heavy tails): the box alone. Returns ``upper`` = (lo, hi) of
    ``mu + k sigma`` and ``upper_box`` / ``upper_track``, and the same for ``lower`` when two-sided.
    """
    g = np.asarray(g, dtype=float)
    mu_hat = sum_y / n
    sd_hat = np.sqrt(np.maximum(sum_y2 / n - mu_hat * mu_hat, 0.0))
    mean_c = sum_c / n
    sd_c = np.sqrt(np.maximum(sum_c2 / n - mean_c * mean_c, 0.0))
    rms_h = np.sqrt(np.maximum(sum_h2, 0.0) / n)
    a_each = alpha_lin * (1 - Q_SHARE - B_SHARE) / (2.0 if two_sided else 1.0)  # the rest: linear term(s)
    s2 = span * span / 4.0 if span is not None else (sigma_x * sigma_x if sigma_x is not None else None)
    if s2 is not None:
        sum_r2 = np.minimum(sum_r2, quadratic_bound(g, n, s2, alpha_lin * Q_SHARE, sum_lq))
    rms_e = np.sqrt(np.maximum(sum_r2, 0.0) / n)
    box_sd_lo, box_sd_hi = np.maximum(sd_c - rms_h, 0.0), sd_c + rms_h
    out: dict[str, Any] = {}
    w2 = (1.0 + k * k) / n
    sigma_lo = np.maximum(np.maximum(sd_hat - rms_e, box_sd_lo), sigma_floor)
    sd_unb = None  # sqrt(A - Bbar) where A > Bbar (the bias-free lower side), else nan
    if sum_w is not None and smax is not None and s2 is not None:
        A = sd_hat * sd_hat - np.asarray(sum_w, dtype=float) / n
        use_v = span is not None and bilinear == "variance"
        b_bar = bilinear_bound(g, n, s2, smax, alpha_lin * Q_SHARE, alpha_lin * B_SHARE, boundary,
                               vmax if use_v else None, span if use_v else None)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(A) & (A > b_bar)
            sd_unb = np.where(ok, np.sqrt(np.where(ok, A - b_bar, 0.0)), np.nan)
        sigma_lo = np.maximum(sigma_lo, np.where(ok, sd_unb - rms_e, 0.0))
    G = None  # a bound on the linear term's sub-Gaussian proxy (bounded rewards; module docstring)
    if span is not None:
        V = w2 * vmax
        c = (1.0 + k * math.sqrt(n - 1.0)) * span / (3.0 * n)
        s_arm = span * span / 4.0 if smax is None else np.where(np.asarray(smax) > 0, smax, span * span / 4.0)
        G = w2 * s_arm
        if box is not None:
            v_box, w_max = linear_variance_bound(box[0], box[1], box[2], k, sigma_lo)
            V = np.minimum(V, v_box)
            c = np.minimum(c, w_max * span / 3.0)
            if len(box) > 3 and box[3] is not None:
                G = np.minimum(G, linear_variance_bound(box[0], box[1], box[3], k, sigma_lo)[0])
        vm = v_min if v_min is not None else w2 * span * span / 4.0  # one reward at maximal variance
    elif sigma_x is not None:
        V, c = w2 * sigma_x * sigma_x, 0.0
        vm = v_min if v_min is not None else V
    else:
        V = None
    with np.errstate(divide="ignore", invalid="ignore"):
        r_quad = np.where(sigma_lo > 0, sum_r2 / (2.0 * n * np.where(sigma_lo > 0, sigma_lo, 1.0)), np.inf)
    r_max = np.minimum(r_quad, 2.0 * rms_e)
    if V is not None and boundary == "mixture":
        lin = mixture_boundary(g * V, a_each / 2.0, vm, c, None if G is None else g * G) / g
    elif V is not None:
        lin = _stitched_np(g * V, a_each / 2.0, vm, c) / g
    else:
        lin = np.inf
    sides = [("upper", 1.0)] + ([("lower", -1.0)] if two_sided else [])
    for name, sgn in sides:
        th = mu_hat + sgn * k * sd_hat
        if sgn > 0:
            t_lo, t_hi = th - lin - k * r_max, th + lin
            if sd_unb is not None:
                t_lo = np.where(np.isnan(sd_unb), t_lo, np.maximum(t_lo, mu_hat - lin + k * sd_unb))
            b_lo, b_hi = sum_lo / n + k * box_sd_lo, sum_hi / n + k * box_sd_hi
        else:
            t_lo, t_hi = th - lin, th + lin + k * r_max
            if sd_unb is not None:
                t_hi = np.where(np.isnan(sd_unb), t_hi, np.minimum(t_hi, mu_hat + lin - k * sd_unb))
            b_lo, b_hi = sum_lo / n - k * box_sd_hi, sum_hi / n - k * box_sd_lo
        t_lo, t_hi, b_lo, b_hi = _unbounded_if_nan(t_lo, t_hi, b_lo, b_hi)
        lo, hi = np.maximum(t_lo, b_lo), np.minimum(t_hi, b_hi)
        hi = np.maximum(hi, lo)
        out[name] = (lo, hi)
        out[name + "_track"] = (t_lo, t_hi)
        out[name + "_box"] = (b_lo, b_hi)
        out[name + "_estimate"] = th
    return out


def _result_entry(name: str, v: Any) -> Any:
    """A snapshot's interval (``upper``, ``upper_box``, ...: two numbers, the first at most the second) or estimate
    (``upper_estimate``: a number) as the track holds it; ``ValueError`` naming it when it is neither.

    >>> _result_entry("upper", [0.1, 0.3]), _result_entry("upper_estimate", 0.2)
    ((0.1, 0.3), 0.2)
    """
    number = (int, float)
    if name.endswith("_estimate") and isinstance(v, number) and not isinstance(v, bool):
        return float(v)
    if not name.endswith("_estimate") and isinstance(v, list) and len(v) == 2 and \
            all(isinstance(x, number) and not isinstance(x, bool) for x in v) and not v[0] > v[1]:
        return (float(v[0]), float(v[1]))
    raise ValueError(f"the threshold track's {name!r} in the snapshot is {str(v)[:60]}: "
                     f"{'a number' if name.endswith('_estimate') else 'two numbers, low to high'} expected")


def _unbounded_if_nan(t_lo: Any, t_hi: Any, b_lo: Any, b_hi: Any) -> tuple[Any, Any, Any, Any]:
    """Lower ends that are nan as ``-inf``, upper ends as ``+inf``: totals with infinite terms (arms whose
    intervals are still unbounded: heavy tails) give ``inf - inf`` in places; such a bound says nothing,
    and an unbounded end says so without poisoning the intersections (and the snapshots) after it."""
    def fill(x: Any, end: float) -> Any:
        return np.where(np.isnan(x), end, x) if np.any(np.isnan(x)) else x
    return fill(t_lo, -np.inf), fill(t_hi, np.inf), fill(b_lo, -np.inf), fill(b_hi, np.inf)


def linear_variance_bound(lo: Any, hi: Any, vbar: Any, k: float, sigma_lo: Any) -> tuple[Any, Any]:
    """Bounds ``(Vbar, wbar)`` on the linear term's ``V = sum_i w_i^2 v_i`` and on ``max_i |w_i|`` from the
    box (module docstring, "Linear term"), valid whenever every ``y_i in [lo_i, hi_i]``, ``v_i <= vbar_i``
    and ``sigma >= sigma_lo``.

    ``w_i = (1 +- k z_i) / n`` with ``|z_i| = |y_i - mu| / sigma <= d_i / sigma_lo``, ``d_i = max(hi_i -
    mean(lo), mean(hi) - lo_i)``, and ``|z_i| <= sqrt(n - 1)``: ``|w_i| <= W_i``. With ``a_i = w_i^2``,
    ``sum a_i = (1 + k^2) / n`` (at most that if sigma = 0), ``0 <= a_i <= W_i^2``, ``V = sum a_i v_i`` is
    at most the value of that fractional knapsack: fill the largest ``vbar_i`` first. It is never above
    ``(1 + k^2) / n * max vbar`` (the bound without the box).

    >>> v, w = linear_variance_bound([0.0, 0.29, 0.29, 0.8], [0.02, 0.31, 0.31, 0.9], [0.0196, 0.2139, 0.2139, 0.16],
    ...                              2.0, 0.2)
    >>> round(v, 4), round((1 + 4) / 4 * 0.2139, 4), round(w, 3)
    (0.2256, 0.2674, 1.116)
    """
    lo_a, hi_a, v_a = (np.asarray(x, dtype=float) for x in (lo, hi, vbar))  # (..., n): one box per row
    n = lo_a.shape[-1]
    z_cap = math.sqrt(n - 1.0)
    s_lo = np.asarray(sigma_lo, dtype=float)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.maximum(hi_a - lo_a.mean(axis=-1, keepdims=True), hi_a.mean(axis=-1, keepdims=True) - lo_a)
        z = np.where((s_lo > 0) & np.isfinite(d), np.minimum(d / np.where(s_lo > 0, s_lo, 1.0), z_cap), z_cap)
    W2 = ((1.0 + k * z) / n) ** 2
    budget = (1.0 + k * k) / n
    order = np.argsort(-v_a, axis=-1, kind="stable")
    W2o, vo = np.take_along_axis(W2, order, -1), np.take_along_axis(v_a, order, -1)
    cum = np.cumsum(W2o, axis=-1)
    take = np.minimum(W2o, np.maximum(budget - (cum - W2o), 0.0))
    V, w = (take * vo).sum(axis=-1), np.sqrt(W2.max(axis=-1))
    return (float(V), float(w)) if V.ndim == 0 else (V, w)


def min_sd_over_box(lo: Any, hi: Any) -> Any:
    """``min sd(y)`` over the box ``lo_i <= y_i <= hi_i`` (population sd), exactly.

    KKT for ``min sum (y_i - mean(y))^2`` on a box: ``y_i = clip(c, lo_i, hi_i)`` with ``c = mean(y)``;
    ``c -> mean(clip(c, lo, hi))`` is non-decreasing with slope <= 1, so the fixed point is found by
    bisection on ``mean(clip(c)) - c`` (decreasing). O(n) per step, 60 steps.

    >>> round(min_sd_over_box([0.0, 0.4, 0.9], [0.2, 0.6, 1.0]), 4)
    0.2858
    """
    lo_a, hi_a = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if not (np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a))):
        return 0.0
    # vectorised over leading axes (one box per row of a 2-d array)
    a, b = lo_a.min(axis=-1, keepdims=True), hi_a.max(axis=-1, keepdims=True)
    for _ in range(60):
        c = (a + b) / 2.0
        up = np.clip(c, lo_a, hi_a).mean(axis=-1, keepdims=True) > c
        a, b = np.where(up, c, a), np.where(up, b, c)
    sd = np.clip((a + b) / 2.0, lo_a, hi_a).std(axis=-1)
    return float(sd) if sd.ndim == 0 else sd


_FIELDS = ("cnt", "sum_y", "sum_y2", "sum_r2", "vmax", "sum_lo", "sum_hi", "sum_c", "sum_c2", "sum_h2", "sum_lq",
           "sum_w", "smax")
#: the totals that an arm with an unbounded interval (heavy tails at small counts) makes infinite, and the
#: sign they take; every other total stays finite
INFINITE_TOTALS = {_FIELDS.index("sum_r2"): 1.0, _FIELDS.index("vmax"): 1.0, _FIELDS.index("sum_lo"): -1.0,
                   _FIELDS.index("sum_hi"): 1.0, _FIELDS.index("sum_h2"): 1.0}


class ThresholdTrack:
    """Per-level additive totals and the threshold interval at ``m_theta`` (module docstring).

    ``record(g, S, lo, hi, S2=...)``: an arm reached count ``g`` (a member of :attr:`levels`) with prefix
    sum ``S``, sum of squares ``S2`` (Bernoulli: ``S``; ``None``: no bias-free lower side at this level) and
    interval ``(lo, hi)``; returns whether ``m_theta`` advanced. ``upper()`` / ``lower()``:
    the current intervals of ``mu + k sigma`` / ``mu - k sigma`` (``(-inf, inf)`` before every arm has
    reported once). Reward range ``[low, high]`` (bounded, Bernoulli), or ``sigma_x`` (sub-Gaussian), or
    neither (heavy tails: the box only). ``boundary``, ``bilinear``: the module docstring ("Boundary", "Bilinear
    term, variances"); both are kept in the snapshot so a restored run stays on one event.
    """

    levels = frozenset(_LEVELS)

    def __init__(self, n: int, k: float, alpha: float, *, two_sided: bool = False, low: float | None = None,
                 high: float | None = None, sigma_x: float | None = None, bernoulli: bool = False,
                 boundary: str = "mixture", bilinear: str = "proxy") -> None:
        if n < 2:
            raise ValueError(f"the k-sigma threshold needs at least 2 arms, got {n}")
        self.n, self.k, self.alpha, self.two_sided = int(n), float(k), float(alpha), bool(two_sided)
        self.low, self.high, self.sigma_x = low, high, sigma_x
        self.bernoulli = bool(bernoulli) and low == 0.0 and high == 1.0
        _boundary(boundary)
        self.boundary = boundary
        self.bilinear = bilinear
        self.m_theta = 0
        self.totals: dict[str, list[float]] = {}  # str(level) -> totals (JSON keys are strings)
        self.result: dict[str, Any] = {}
        self._after_restore()

    def _after_restore(self) -> None:
        low, high = self.low, self.high
        self._span: float | None = (high - low) if low is not None and high is not None else None
        self.bernoulli = bool(getattr(self, "bernoulli", False))
        # a snapshot from before the mixture boundary keeps the stitched one: every level of one run is
        # tested against the same boundary, so the running intersection stays on one event
        self.boundary = str(getattr(self, "boundary", "stitched"))
        _boundary(self.boundary)
        # ... and the bilinear term's bound: "proxy" (the proxies alone, what a snapshot without the field
        # was taken with) or "variance" (also the variances: AnytimeKSigma's tracks since it exists)
        self.bilinear = str(getattr(self, "bilinear", "proxy"))
        if self.bilinear not in ("variance", "proxy"):
            raise ValueError(f"unknown bilinear bound {self.bilinear!r}; known: 'proxy', 'variance'")
        self._s2 = (self._span * self._span / 4.0 if self._span is not None
                    else (self.sigma_x * self.sigma_x if self.sigma_x is not None else None))
        a_q = self.alpha * Q_SHARE
        self._u_of: dict[int, float] = {}
        self._memo: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # record's per-arm terms (_terms)
        for key, t in self.totals.items():  # a snapshot from before the proxies' field: every arm at s2
            if len(t) < 11:
                t.append(t[0] * -math.log1p(-epoch_u(int(key), self.n, a_q)))
            if len(t) < len(_FIELDS):  # ... or before the sample variances: none at this level
                t.extend([-1.0, 0.0])

    def proxy(self, lo: float, hi: float) -> float | None:
        """Bound on the arm's sub-Gaussian proxy, valid while its mean is in ``[lo, hi]``: Bernoulli, the
        Kearns-Saul proxy at the point nearest 1/2 (it increases towards 1/2); otherwise ``s2`` (``None``
        without a range or ``sigma_x``: heavy tails)."""
        if not self.bernoulli:
            return self._s2
        return kearns_saul(min(max(0.5, lo), hi))

    def vbar(self, lo: float, hi: float) -> float:
        """Largest variance of a law on ``[low, high]`` with mean in ``[lo, hi]`` (Bhatia-Davis)."""
        low, high = self.low, self.high
        if low is None or high is None:  # exactly when _span is None
            return math.inf
        mid = (low + high) / 2.0
        x = min(max(mid, lo), hi)
        return (x - low) * (high - x)

    def record(self, g: int, S: float, lo: float, hi: float,
               box: Callable[[], tuple[list[float], list[float]]] | None = None, S2: float | None = None) -> bool:
        """Add one arm's terms at level ``g``; ``box()`` (optional) returns the arms' current intervals
        ``(lo list, hi list)``, read only when ``m_theta`` advances (for :func:`min_sd_over_box`)."""
        if g < self.m_theta or g not in self.levels:
            return False
        key = str(g)
        t = self.totals.get(key)
        if t is None:
            t = self.totals[key] = [0.0] * len(_FIELDS)
        if S2 is None and self.bernoulli:
            S2 = S
        if self.bernoulli:  # few distinct (g, S, lo, hi): memoised (~3 MB at most)
            mk = (g, S, lo, hi, S2)
            terms = self._memo.get(mk)
            if terms is None:
                terms = self._terms(g, S, lo, hi, S2)
                if len(self._memo) >= 1 << 13:
                    self._memo.clear()
                self._memo[mk] = terms
        else:  # continuous rewards: (S, S2) hardly ever repeat
            terms = self._terms(g, S, lo, hi, S2)
        y, y2, r2, v, c, c2, h2, lq, p, w = terms
        t[0] += 1
        t[1] += y
        t[2] += y2
        t[3] += r2
        if v > t[4]:
            t[4] = v
        t[5] += lo
        t[6] += hi
        t[7] += c
        t[8] += c2
        t[9] += h2
        if p is not None:
            t[10] += lq
            if p > t[12]:
                t[12] = p
        if w is None or t[11] < 0.0:
            t[11] = -1.0  # negative: not every arm gave its sample variance (JSON-safe, unlike nan)
        else:
            t[11] += w
        if t[0] >= self.n:
            self._advance(g, box)
            return True
        return False

    def _terms(self, g: int, S: float, lo: float, hi: float, S2: float | None) -> tuple[Any, ...]:
        """One arm's terms at level g (a pure function of its arguments at this track's settings, memoised
        by :meth:`record`: the arms of a run share few ``(g, S, lo, hi)`` at small counts):
        ``y, y^2, r^2, vbar, c, c^2, h^2``, the quadratic bound's ``-log(1 - u p / s2)`` and proxy ``p``
        (``None`` without ``s2``), and the sample-variance term (``None``: not given)."""
        y = S / g
        r = max(y - lo, hi - y)
        c, h = (lo + hi) / 2.0, (hi - lo) / 2.0
        if not math.isfinite(c):  # an unbounded interval (heavy tails at small counts): the box is unbounded
            c = y  # through h = inf; a finite centre keeps the totals free of nan (inf - inf)
        v = self.vbar(lo, hi)
        s2 = self._s2
        lq = p = None
        if s2 is not None:
            u = self._u_of.get(g)
            if u is None:
                u = self._u_of[g] = epoch_u(g, self.n, self.alpha * Q_SHARE)
            p = self.proxy(lo, hi)
            assert p is not None  # s2 is set, so proxy is s2 or the Bernoulli proxy
            lq = -math.log1p(-u * min(p / s2, 1.0))
        # the unbiased sample variance over g: (S2 - S^2 / g) / ((g - 1) g)
        w = None if S2 is None or g < 2 else max(S2 - S * y, 0.0) / ((g - 1.0) * g)
        return y, y * y, r * r, v, c, c * c, h * h, lq, p, w

    def _advance(self, g: int, box: Any = None) -> None:
        self.m_theta = g
        t = dict(zip(_FIELDS, self.totals[str(g)]))
        box_arg: tuple[Any, ...] | None = None
        sigma_floor = 0.0
        if box is not None:
            lo_b, hi_b = box()
            prox = [self.proxy(a, b) for a, b in zip(lo_b, hi_b)] if self._s2 is not None else None
            box_arg = (lo_b, hi_b, [self.vbar(a, b) for a, b in zip(lo_b, hi_b)], prox)
            sigma_floor = min_sd_over_box(lo_b, hi_b)
        for key in [kk for kk in self.totals if int(kk) < g]:
            del self.totals[key]
        res = threshold_bounds(g, self.n, self.k, self.alpha, sum_y=t["sum_y"], sum_y2=t["sum_y2"],
                               sum_r2=t["sum_r2"], vmax=t["vmax"], sum_lo=t["sum_lo"], sum_hi=t["sum_hi"],
                               sum_c=t["sum_c"], sum_c2=t["sum_c2"], sum_h2=t["sum_h2"], span=self._span,
                               sigma_x=self.sigma_x, two_sided=self.two_sided, sum_lq=t["sum_lq"],
                               sigma_floor=sigma_floor, box=box_arg,
                               sum_w=None if t["sum_w"] < 0.0 else t["sum_w"], smax=t["smax"],
                               boundary=self.boundary, bilinear=self.bilinear)
        prev = self.result
        self.result = {kk: (tuple(float(x) for x in v) if isinstance(v, tuple) else float(v))
                       for kk, v in res.items()}
        for side in ("upper", "lower"):  # every level's interval holds on the same event: intersect them
            if side in self.result:
                lo, hi = self.result[side]
                self.result[side + "_level"] = (lo, hi)
                p_lo, p_hi = prev.get(side, (-math.inf, math.inf))
                lo, hi = max(lo, p_lo), min(hi, p_hi)
                self.result[side] = (lo, max(hi, lo))

    def upper(self) -> tuple[float, float]:
        return self.result.get("upper", (-math.inf, math.inf))

    def lower(self) -> tuple[float, float]:
        return self.result.get("lower", (-math.inf, math.inf))

    def estimate(self, side: str = "upper") -> float:
        return self.result.get(side + "_estimate", math.nan)

    def snapshot(self) -> dict[str, Any]:
        return {"n": self.n, "k": self.k, "alpha": self.alpha, "two_sided": self.two_sided, "low": self.low,
                "bernoulli": self.bernoulli, "boundary": self.boundary,
                "high": self.high, "sigma_x": self.sigma_x, "m_theta": self.m_theta,
                "totals": {kk: list(v) for kk, v in self.totals.items()},
                "result": {kk: (list(v) if isinstance(v, tuple) else v) for kk, v in self.result.items()},
                **({} if self.bilinear == "proxy" else {"bilinear": self.bilinear})}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> ThresholdTrack:
        obj = cls.__new__(cls)
        d = dict(state)
        for part in ("totals", "result"):
            if not isinstance(d.get(part), dict):
                raise ValueError(f"the threshold track's {part!r} in the snapshot is {str(d.get(part))[:60]}: an "
                                 "object expected")
        # (a list, or a streamed checkpoint's lazy array; anything else is refused by check_track, named)
        d["totals"] = {kk: v if isinstance(v, (str, dict)) or not hasattr(v, "__iter__") else list(v)
                       for kk, v in d["totals"].items()}
        d["result"] = {kk: _result_entry(kk, v) for kk, v in d["result"].items()}
        obj.__dict__.update(d)
        check_track(obj, _FIELDS, INFINITE_TOTALS)
        obj._after_restore()
        return obj
