"""``select_pairs`` and ``candidate_gains``: the public entry points of the acquisition rules.

They check the call, build the context (:func:`planner.acquisition.state.setup`)
and dispatch: the greedy (:mod:`~planner.acquisition.greedy`), the draws path
(:mod:`~planner.acquisition.draws`) or a baseline
(:mod:`~planner.acquisition.baselines`), with the stopping advice
(:mod:`~planner.acquisition.stopping`) beside the picks.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.acquisition.baselines import baseline_pairs, least_judged
from planner.acquisition.clustering import Clustering
from planner.acquisition.draws import DrawsScorer, active_draws
from planner.acquisition.gains import RankingScorer, gaussian_gains, score_sequence
from planner.acquisition.greedy import active_gaussian
from planner.acquisition.objectives import sum_to_zero_basis
from planner.acquisition.options import STRATEGIES, SelectionOptions
from planner.acquisition.positions import Orders, order_capacities
from planner.acquisition.results import CandidateGains, Selection
from planner.acquisition.state import pair_capacity, setup, spend
from planner.acquisition.stopping import settled_advice
from planner.acquisition.ties import rounded
from planner.counts import Counts
from planner.errors import UsageError
from planner.model import bt


def select_pairs(posterior: bt.GaussianPosterior, k: int, *, strategy: str = "active",
                 objective: str = "ranking", top_k: int | None = None, anchor: str | None = None,
                 judged: Counts | None = None, pending: Counts | None = None,
                 rng: np.random.Generator, draws: np.ndarray | None = None,
                 allowed=None, true_mean: np.ndarray | None = None,
                 explore: float | None = None, thompson: bool | None = None,
                 capacity: dict | None = None, order_capacity: dict | None = None,
                 clusters: Clustering | None = None, options: SelectionOptions | None = None) -> Selection:
    """Choose ``k`` system pairs for the next batch.

    Parameters
    ----------
    posterior : GaussianPosterior
        Current posterior of the strengths (logit scale, sum to zero).
    k : int
        Batch size (number of judgments to request), ``k >= 1``.
    strategy : {"active", "round-robin", "random", "anchor", "swiss", "arena", "oracle"}
        ``active``: greedy expected reduction of ``objective`` (each pick
        conditioned on fantasized rank-one updates of the picks before it and
        of pending items); with no judgments and nothing pending, a connected
        start design (:func:`connected_start`). ``round-robin``: least-judged
        pairs first (judged + pending + picks so far), ties broken by ``rng``.
        ``random``: uniform pairs, independently. ``anchor``: every system vs
        ``anchor``, least-judged first. ``swiss``: neighbours in the
        posterior-mean ranking, least-judged neighbour pair first. ``arena``:
        Chiang et al. (2024) eq. 9 sampling (see :func:`arena_weights`).
        ``oracle``: ``active`` with ``true_mean`` in place of the posterior
        mean (same covariance) — the design chosen with the true strengths
        known (simulator only).
    objective : {"ranking", "entropy", "variance", "anchor", "top-k"}
        What uncertainty to reduce (see :func:`objective_value`). Used to pick
        for ``active``/``oracle``; reported (gains) for every strategy.
    top_k : int, optional
        K for ``objective="top-k"``.
    anchor : str, optional
        Anchor system name for the ``anchor`` strategy/objective.
    judged, pending : Counts, optional
        What has been judged (only its per-pair counts are used: the posterior
        already contains it) and what is issued but not returned (fantasized
        as information before selection; every field of a pending cell counts
        as one issued item, its position known from the cell).
    rng : numpy.random.Generator
        All randomness (tie-breaks, random/arena sampling, start design).
    draws : ndarray (S, M), optional
        Posterior draws (e.g. NUTS). With ``draws`` the expected reductions of
        ``active``/``oracle`` are computed by importance re-weighting of the
        draws instead of the Gaussian closed forms.
    allowed : set of (int, int), optional
        Restrict candidates to these pairs (order inside a pair ignored).
    true_mean : ndarray (M,), optional
        True strengths, required by ``oracle``.
    explore : float in [0, 1), optional
        ``active`` only: ``round(explore · k)`` picks of the batch go to the
        least-judged pairs (judged + pending + picks so far) before the greedy
        fills the rest, conditioned on them — a floor of spread-out
        comparisons that guards against a wrong model locking the design in.
        Default ``options.explore``.
    thompson : bool, optional
        ``active`` with ``ranking``/``top-k``: the misorder risks are computed
        with the gaps of one draw ``β̃ ~ N(μ, Σ)`` (from ``rng``) in place of
        the posterior mean (Thompson-style randomization of the objective).
        Default ``options.thompson``.
    capacity : dict {(i, j): int}, optional
        Most picks each pair may take in this batch (e.g. its unused
        prompts); pairs absent from it are unlimited. Strategies never exceed
        it: a batch the pairs cannot fill comes back shorter, and
        ``Selection.notes`` says so (likewise when swiss runs out of
        neighbour pairs and takes the least-judged other pairs).
    order_capacity : dict {(left, right): int}, optional
        Most picks each presentation order may take (``left`` shown first).
        A pair named here in one order only can only be shown that way (a
        replay pool, existing data, a judge that sees one order): its
        verdicts inform ``β_left − β_right + γ``, and the objective counts
        what the position effect γ leaves unknown. Pairs not named are
        unrestricted; where both orders are open each pick takes the order
        its pair has been shown in less often (see ``Selection.left``).
    clusters : Clustering, optional
        How much a pick of each pair is worth when it repeats a (prompt,
        pair) cluster (:class:`~planner.acquisition.clustering.Clustering`):
        its information is scaled by the cluster's marginal effective
        sample size, and the stopping advice widens each pair's interval by
        the design effect of its verdicts so far. None: every verdict
        independent (the model's own assumption).
    options : SelectionOptions, optional
        The tunables of the rules (stopping threshold, ranking risk,
        look-ahead, batch cap, pools, exploration); default
        :class:`SelectionOptions`.

    Returns
    -------
    Selection
    """
    k = _check_call(k, strategy, rng, true_mean)
    opts = SelectionOptions() if options is None else options
    su = setup(posterior, objective, top_k, anchor, judged, pending, draws, allowed,
                true_mean if strategy == "oracle" else None, opts, need_anchor=strategy == "anchor")
    ctx, state, counts = su.ctx, su.state, su.counts
    # a study with no judgments (judged given and empty) and nothing pending
    no_data = judged is not None and not counts.any()
    notes: list[str] = []
    ci, cj, capv, caps, k = _fit_capacity(capacity, order_capacity, su.ci, su.cj, k, notes)
    shares = None if clusters is None else clusters.shares(ci, cj)
    settled, reason = settled_advice(ctx, su.systems, None if clusters is None else clusters.inflation(su.systems))
    if k == 0:
        return Selection(su.systems, [], np.zeros(0), 0.0, 0.0, 0.0, strategy, objective, settled, reason,
                         "gaussian", tuple(notes))
    active = strategy in ("active", "oracle") and not no_data
    pre, pre_left, pre_gains, before = [], [], [], None
    if active and strategy == "active":
        share = opts.explore if explore is None else float(explore)
        pre = least_judged(ci, cj, counts, _n_explore(share, k), rng, capv)
        if (opts.thompson if thompson is None else thompson) and objective in ("ranking", "top-k"):
            ctx = _thompson_context(ctx, rng)
    orders = Orders.build(ci, cj, su.ordered, caps, rng) if active else None
    if pre:
        pre_left, pre_gains, before, capv = _explored(ctx, state, ci, cj, pre, capv, orders, shares)
        k -= len(pre)
    engine = "draws" if active and k > 0 and su.draws is not None and strategy == "active" else "gaussian"
    if orders is not None and k > 0:      # orders are built for an active selection only
        if engine == "draws":
            pairs, gains, b0, left = active_draws(ctx, state, su.draws, ci, cj, k, pending, capv, orders, shares)
        else:
            pairs, gains, b0, left = active_gaussian(ctx, state, ci, cj, k, rng, capv, orders, shares)
        before = b0 if before is None else before
    elif orders is not None:
        pairs, gains, left = [], [], []
    else:
        pairs = baseline_pairs(strategy, ctx, ci, cj, counts, k, rng, capv, allowed, anchor, notes)
        left = Orders.build(ci, cj, su.ordered, caps, rng).assign(ci, cj, pairs)
        gains, before = score_sequence(ctx, state, pairs, left)
    pairs, left, gains = pre + list(pairs), pre_left + list(left), list(pre_gains) + list(gains)
    gains = np.asarray(gains, dtype=float)
    total = float(gains.sum())
    # set by the exploration picks, the active search or the baseline's scoring: k > 0 here, so one ran
    assert before is not None
    return Selection(su.systems, [(int(i), int(j)) for i, j in pairs], gains, total, float(before),
                     float(before - total), strategy, objective, settled, reason, engine, tuple(notes),
                     tuple(int(x) for x in left))


def _check_call(k, strategy, rng, true_mean) -> int:
    """The batch size as an int, after the checks of the call itself."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise UsageError(f"batch size ({k}) must be an integer >= 1", parameters=("k",))
    if strategy not in STRATEGIES:
        raise UsageError(f"`strategy` ({strategy!r}) must be one of " + ", ".join(STRATEGIES),
                         parameters=('strategy',))
    if not isinstance(rng, np.random.Generator):
        raise UsageError("rng must be a numpy.random.Generator (np.random.default_rng(seed))", parameters=("rng",))
    if strategy == "oracle" and true_mean is None:
        raise UsageError("the oracle strategy needs true_mean (the true strengths)",
                         parameters=("strategy", "true_mean"))
    return int(k)


def _fit_capacity(capacity, order_capacity, ci, cj, k, notes):
    """Candidates with capacity left, their capacity (None: unlimited), each order's capacity (None:
    unrestricted) and the batch size they can hold."""
    capv = pair_capacity(capacity, ci, cj)
    caps = order_capacities(order_capacity, ci, cj)
    if caps is not None:
        capv = caps[0] + caps[1] if capv is None else np.minimum(capv, caps[0] + caps[1])
    if capv is None:
        return ci, cj, capv, caps, k
    keep = capv > 0
    ci, cj, capv = ci[keep], cj[keep], capv[keep]
    caps = None if caps is None else (caps[0][keep], caps[1][keep])
    total = float(capv.sum())
    if total < k:
        notes.append(f"only {int(total)} of the {k} requested comparison(s) can be issued: the pairs that "
                     f"may be chosen have no more unused slots (prompts); the batch is shorter")
        k = int(total)
    return ci, cj, capv, caps, k


def _n_explore(share, k) -> int:
    """Picks of the exploration floor: ``round(share · k)``."""
    if not 0.0 <= share < 1.0:
        raise UsageError(f"explore ({share}) must be in [0, 1)", parameters=("explore",))
    return int(round(share * k))


def _explored(ctx, state, ci, cj, pre, capv, orders, shares):
    """The exploration floor's picks: their orders and gains, the value before them, the capacity left."""
    left = orders.assign(ci, cj, pre)
    if shares is not None:
        shares.spend(ci, cj, pre)
    pre_gains, before = score_sequence(ctx, state, pre, left)
    return left, pre_gains, before, spend(capv, ci, cj, pre)


def _thompson_context(ctx, rng):
    """The context with one posterior draw of the strengths as the ranking's means.

    The draw is ``μ + Q L z`` with ``L`` the Cholesky factor of the covariance in the
    sum-to-zero basis ``Q``: unique, so every CPU draws the same strengths from the same
    ``z`` (an eigendecomposition's vectors may flip sign between LAPACK builds).
    """
    q = sum_to_zero_basis(ctx.mu.size)
    sub = q.T @ ctx.cov0 @ q
    lower = np.linalg.cholesky(0.5 * (sub + sub.T) + 1e-12 * np.trace(sub) / sub.shape[0] * np.eye(sub.shape[0]))
    draw = ctx.mu + q @ (lower @ rng.standard_normal(sub.shape[0]))
    return replace(ctx, mu=draw - draw.mean())


def candidate_gains(posterior: bt.GaussianPosterior, *, objective: str = "ranking",
                    top_k: int | None = None, anchor: str | None = None,
                    pending: Counts | None = None, draws: np.ndarray | None = None,
                    allowed=None, true_mean: np.ndarray | None = None, order_capacity: dict | None = None,
                    options: SelectionOptions | None = None) -> CandidateGains:
    """Score every candidate pair by the expected reduction from one judgment.

    The same quantities ``select_pairs`` maximises for its first pick: from the
    Gaussian closed forms, or, with ``draws`` (S, M), by importance
    re-weighting of the draws (every candidate scored). ``pending`` items are
    fantasized first; ``true_mean`` replaces the posterior mean (oracle);
    ``order_capacity`` and ``options`` as in :func:`select_pairs`. A pair scores
    its next pick in the order that pick would take (an exact balance of its
    orders broken by a fixed coin, ``numpy.random.default_rng(0)``).
    """
    su = setup(posterior, objective, top_k, anchor, None, pending, draws, allowed, true_mean,
                SelectionOptions() if options is None else options)
    ctx, state, ci, cj = su.ctx, su.state, su.ci, su.cj
    orders = Orders.build(ci, cj, su.ordered, order_capacities(order_capacity, ci, cj), np.random.default_rng(0))
    if su.draws is not None:
        rk = RankingScorer(ctx, state) if objective in ("ranking", "top-k") else None
        sc = DrawsScorer(ctx, su.draws, pending, None if rk is None else (rk.kr, rk.lr))
        g, engine = sc.gains(ci, cj, orders.signs()), "draws"
    else:
        g, engine = gaussian_gains(ctx, state, ci, cj, orders), "gaussian"
    order = np.argsort(-rounded(g), kind="stable")
    return CandidateGains(tuple(posterior.systems), [(int(ci[t]), int(cj[t])) for t in order],
                          g[order], engine)
