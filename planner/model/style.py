"""Style- and length-controlled Bradley–Terry–Davidson model (core, pure).

Chatbot Arena's *style control* (lmsys.org/blog/2024-08-28-style-control) adds
to the Bradley–Terry logit a linear term in the style differences of the two
responses: length and markdown elements (headers, list items, bold spans). The
strengths are then "what is left" once the judge's taste for long or heavily
formatted answers is accounted for.

Features are counted the way upstream counts them — FastChat
(github.com/lm-sys/FastChat, commit 0e6d3e4beaab66f4d3f93db72541a4abab8af28d):

* ``fastchat/serve/monitor/add_markdown_info.py`` ``count_markdown_elements``
  and ``remove_pattern``: fenced code blocks are removed first, then headers
  ``^#{1..6}\\s``, ordered ``^\\s*\\d+\\.\\s`` and unordered ``^\\s*[-*+]\\s``
  list items and bold spans ``**…**`` / ``__…__`` are counted;
* ``fastchat/serve/monitor/rating_systems.py`` ``preprocess_for_style``: the
  covariate of a feature is ``(f_a - f_b) / (f_a + f_b + 1)`` (``add_one=True``),
  then standardised.

Two departures, both documented in docs/methods.md: the length is the number
of whitespace-separated words (upstream counts gpt-3.5 tokens with tiktoken,
which needs a network download; the normalised difference is a ratio, so the
unit matters little), and each covariate is divided by its root mean square
without being centred, so swapping the two responses flips its sign exactly
(the left/right asymmetry is the model's separate position term).

The model, per judgment with ``a`` shown first (left)::

    delta = beta[a] - beta[b] + gamma_pos * p + sum_f coef[f] * x[f]
    P(A), P(B), P(tie) = planner.model.bt.outcome_probs(delta, nu)

with ``p = 1`` when the position is known (the row is oriented so that ``a``
is the left response) and ``p = 0`` when it is unknown. Priors: ``beta ~ ZeroSumNormal(3)`` (sd fixed,
:data:`STRENGTH_SD`), ``coef[f] ~ Normal(0, 1)`` (logit per root-mean-square
unit of covariate, :data:`COEF_SD`), and the raw model's priors on the
position shift and the tie parameter (:class:`planner.model.Prior`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from planner.equality import array_eq
from planner.errors import UsageError
from planner.limits import check_choice, check_float, check_optional_float

FEATURES = ("length", "headers", "lists", "bold")
FEATURE_LABELS = {"length": "length (words)", "headers": "markdown headers",
                  "lists": "markdown list items", "bold": "bold spans"}
COEF_SD = 1.0  # prior sd of a style coefficient (logit per rms unit of covariate)
#: prior sd of each strength (logit), fixed: a weak N(0, 3^2) like Arena's L2 penalty (reg 0.5 on
#: ratings scaled by ln 10, i.e. sd 3.3 logits). Not the raw model's type-II MAP of sigma: when length
#: is nearly a proxy for system identity, the marginal likelihood prefers one coefficient to M spread-out
#: strengths and sigma collapses (measured on tests/_style_fixture.py, 20 seeds, true coefficient 1.0:
#: type-II sigma mean estimate 0.77, sigma fixed at the raw model's mode 0.81 with 15/20 intervals
#: covering; sigma = 3: 0.94 with 20/20 covering).
STRENGTH_SD = 3.0

_CODE = re.compile("```([^`]*)```")
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_ORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
_UNORDERED = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD_STARS = re.compile(r"\*\*[^*\n]+\*\*")
_BOLD_UNDERSCORES = re.compile(r"__[^_\n]+__")


def style_features(text: str) -> np.ndarray:
    """Style features of one response: ``[words, headers, list items, bold spans]``.

    ``words`` counts whitespace-separated words of the whole text; the markdown
    elements are counted after removing fenced code blocks, as FastChat's
    ``count_markdown_elements`` does. A header line ``## x`` counts once
    (upstream's six per-level patterns ``^#{k}\\s`` are disjoint, so their sum
    is the one pattern ``^#{1,6}\\s``).
    """
    words = len(text.split())
    for block in _CODE.findall(text):
        text = text.replace(block, "")
    lists = len(_ORDERED.findall(text)) + len(_UNORDERED.findall(text))
    bold = len(_BOLD_STARS.findall(text)) + len(_BOLD_UNDERSCORES.findall(text))
    return np.array([words, len(_HEADER.findall(text)), lists, bold], dtype=float)


def normalized_difference(fa, fb) -> np.ndarray:
    """Arena's per-feature covariate ``(f_a - f_b) / (f_a + f_b + 1)`` (0 when both are 0)."""
    fa = np.asarray(fa, dtype=float)
    fb = np.asarray(fb, dtype=float)
    return (fa - fb) / (fa + fb + 1.0)


# ----------------------------------------------------------------- design
@array_eq
@dataclass(frozen=True)
class StyleDesign:
    """Per-judgment design of the style-controlled model, grouped into rows.

    Attributes
    ----------
    systems : tuple of str
    features : tuple of str
        Covariate names (columns of ``x``).
    a, b : ndarray of int (n_rows,)
        ``a`` is the left/first response when ``position == 1``; the stored
        orientation when ``position == 0`` (unknown).
    position : ndarray of float (n_rows,)
        1 = position known (``a`` left), 0 = unknown.
    x : ndarray (n_rows, F)
        Scaled covariates (normalised difference a - b divided by ``scale``).
    scale : ndarray (F,)
        Root mean square of each normalised difference over the usable
        judgments (1 where it is 0: a feature that never differs).
    a_wins, b_wins, ties : ndarray of int (n_rows,)
        Judgments per identical (a, b, position, x) row.
    clusters : StyleClusters or None
        With ``cluster`` given to :meth:`build`: the judgments tallied per (cluster, row), what the
        cluster-robust covariance of the fit sums over; None: judgments independent.
    """

    systems: tuple[str, ...]
    features: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    position: np.ndarray
    x: np.ndarray
    scale: np.ndarray
    a_wins: np.ndarray
    b_wins: np.ndarray
    ties: np.ndarray
    clusters: StyleClusters | None = None

    @property
    def n_judgments(self) -> int:
        return int(self.a_wins.sum() + self.b_wins.sum() + self.ties.sum())

    @classmethod
    def build(cls, systems, a, b, position, outcome, feat_a, feat_b,
              features: tuple[str, ...] = FEATURES, cluster=None, cluster_by: str = "item") -> StyleDesign:
        """Group usable judgments into design rows.

        Parameters
        ----------
        systems : sequence of str
        a, b : int arrays (n,)
            System indices; ``a`` shown left when ``position`` is 1.
        position : array (n,) of 1 (known, a left) or 0 (unknown)
        outcome : int array (n,)
            0 = a won, 1 = b won, 2 = tie (invalid judgments are left out by the caller).
        feat_a, feat_b : arrays (n, F)
            Style features of a's and b's responses (:func:`style_features`).
        cluster : int array (n,), optional
            The cluster of each judgment (:func:`planner.stats.clusters.cluster_ids`, named ``cluster_by``):
            the design then carries :class:`StyleClusters`. The rows are the same with or without it.
        """
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        outcome = np.asarray(outcome, dtype=np.int64)
        position = np.asarray(position, dtype=float)
        if not (a.size == b.size == outcome.size == position.size):
            raise UsageError("style design: a, b, position and outcome must have the same length",
                             parameters=('a', 'b', 'position', 'outcome'))
        if outcome.size and (outcome.min() < 0 or outcome.max() > 2):
            raise UsageError("style design: outcome codes must be 0 (A), 1 (B) or 2 (tie)", parameters=('outcome',))
        raw = normalized_difference(feat_a, feat_b).reshape(a.size, len(features))
        rms = np.sqrt(np.mean(raw**2, axis=0)) if a.size else np.ones(len(features))
        scale = np.where(rms > 0, rms, 1.0)
        x = raw / scale
        key = np.column_stack([a, b, position, x])
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        tab = np.zeros((uniq.shape[0], 3), dtype=np.int64)
        np.add.at(tab, (inv, outcome), 1)
        clusters = None if cluster is None else StyleClusters.tally(cluster_by, cluster, inv, outcome)
        return cls(tuple(systems), tuple(features), uniq[:, 0].astype(np.int64), uniq[:, 1].astype(np.int64),
                   uniq[:, 2].copy(), uniq[:, 3:].copy(), scale, tab[:, 0], tab[:, 1], tab[:, 2], clusters)


@array_eq
@dataclass(frozen=True)
class StyleClusters:
    """Judgments of a :class:`StyleDesign` tallied per (cluster, design row): the sandwich's meat sums over these.

    Attributes
    ----------
    by : str
        The clustering (:data:`planner.vocabulary.CLUSTER_BY`).
    n_clusters : int
    cluster, row : ndarray of int64
        One entry per distinct (cluster, row of the design) with a judgment.
    a_wins, b_wins, ties : ndarray of int64
        Its judgments by outcome (``a`` as in the design row).
    """

    by: str
    n_clusters: int
    cluster: np.ndarray
    row: np.ndarray
    a_wins: np.ndarray
    b_wins: np.ndarray
    ties: np.ndarray

    @classmethod
    def tally(cls, by: str, cluster, row, outcome) -> StyleClusters:
        """Per-judgment ``cluster`` ids, design ``row`` and ``outcome`` (0/1/2) tallied per (cluster, row)."""
        from planner.stats.clusters import check_cluster_by, dense_codes

        check_cluster_by(by)
        cluster = np.asarray(cluster, dtype=np.int64).ravel()
        row = np.asarray(row, dtype=np.int64).ravel()
        if cluster.size != row.size:
            raise UsageError(f"style design: {cluster.size} cluster ids for {row.size} judgments")
        z = np.zeros(0, dtype=np.int64)
        if row.size == 0:
            return cls(by, 0, z, z, z, z, z)
        key = dense_codes(cluster, row)
        k = int(key.max()) + 1
        first = np.zeros(k, dtype=np.int64)
        first[key[::-1]] = np.arange(key.size - 1, -1, -1)
        tab = [np.bincount(key, weights=(outcome == o), minlength=k).astype(np.int64) for o in range(3)]
        ids = dense_codes(cluster[first])
        return cls(by, int(ids.max()) + 1, ids, row[first], *tab)


# ----------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class StyleFit:
    """A style-controlled fit.

    Attributes
    ----------
    fit : planner.model.Fit
        The controlled strengths (sum to zero, logit) in the raw model's
        result type, so rank intervals, letters and P(best) reuse the same code;
        ``fit.gamma`` is the position effect, ``fit.nu`` the tie parameter.
    features : tuple of str
    coef : tuple of planner.model.Summary
        Posterior mean, sd and 95% interval of each style coefficient, in logit
        per root-mean-square unit of its covariate.
    scale : ndarray (F,)
        The root mean square of each normalised difference (the unit above).
    coef_draws : ndarray (S, F)
    coef_sd : float
        Prior sd of the coefficients.
    """

    fit: object
    features: tuple[str, ...]
    coef: tuple
    scale: np.ndarray
    coef_draws: np.ndarray = field(repr=False)
    coef_sd: float = COEF_SD

    def odds_ratio(self, feature: str) -> tuple[float, float, float]:
        """``exp(coef)`` of a feature: mean-coefficient value and its 95% interval.

        The factor by which one root-mean-square unit of covariate in favour of
        a response multiplies its odds of winning rather than losing
        (``P(A)/P(B) = exp(delta)`` in Davidson's model, ties or not).
        """
        c = self.coef[self.features.index(feature)]
        return math.exp(c.mean), math.exp(c.lo), math.exp(c.hi)

    def to_dict(self) -> dict:
        return {"features": list(self.features), "scale": self.scale, "coef_sd": self.coef_sd,
                "coefficients": {f: c for f, c in zip(self.features, self.coef)}}


# ----------------------------------------------------------------- fitting
def fit_style(design: StyleDesign, *, engine: str = "laplace", prior=None, coef_sd: float = COEF_SD,
              sigma: float | None = STRENGTH_SD, seed: int = 0, draws: int = 1000, tune: int = 1000,
              chains: int = 2, cores: int | None = None, progressbar: bool = False) -> StyleFit:
    """Fit strengths, style coefficients, position effect and tie parameter jointly.

    Parameters
    ----------
    design : StyleDesign
    engine : {"laplace", "nuts"}
        ``"laplace"``: Newton to the posterior mode of
        ``(beta, coef, gamma_pos, log_nu)`` with sigma at its type-II MAP (the
        raw model's treatment), Gaussian at the mode, draws seeded by ``seed``;
        ``"nuts"``: the same model in pymc.
    prior : planner.model.Prior, optional
    coef_sd : float
        Prior sd of each style coefficient (logit per rms unit).
    sigma : float or None
        Prior sd of the strengths, fixed (default :data:`STRENGTH_SD`, see
        there why); a large value gives the maximum-likelihood strengths.
        ``None``: the raw model's type-II MAP of sigma (Laplace only).
    seed, draws, tune, chains, cores, progressbar
        As in :func:`planner.model.fit`.

    With ``design.clusters`` (:meth:`StyleDesign.build` given the judgments' clusters) the covariance is
    cluster-robust (:mod:`planner.model.robust`; ``fit.clustering`` says by how much it widened), else
    model-based.
    """
    from planner.model.types import Prior
    from planner.vocabulary import ENGINES

    check_choice("engine", engine, ENGINES)
    check_float("coef_sd", coef_sd, 0.0, math.inf, low_open=True)
    if design.n_judgments == 0:
        raise UsageError("style control needs at least one usable judgment with both response texts",
                         parameters=('design',))
    prior = prior or Prior()
    check_optional_float("sigma", sigma, 0.0, math.inf, low_open=True)
    if engine == "laplace":
        from planner.model.style_laplace import fit_style_laplace

        return fit_style_laplace(design, prior, coef_sd, seed, draws, sigma)
    if sigma is None:
        raise UsageError("the type-II MAP of `sigma` (None) is a Laplace-engine option (`engine` laplace)",
                         parameters=('sigma', 'engine'))
    from planner.model.style_nuts import fit_style_nuts

    return fit_style_nuts(design, prior=prior, coef_sd=coef_sd, sigma=sigma, seed=seed, draws=draws, tune=tune,
                          chains=chains, cores=cores, progressbar=progressbar)
