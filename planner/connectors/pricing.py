"""Token prices, the cost of an answer and the pre-send estimate used by ``--max-cost``.

Prices are US dollars per 1,000,000 tokens (the unit of provider price lists),
one for prompt (input) tokens and one for completion (output) tokens. Batch API
discounts are not applied automatically: pass the batch prices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.errors import UsageError, parameters_of, quote, shown
from planner.limits import plausible_tokens

#: completion tokens assumed for a request before any answer of the run has been seen
#: (a verdict with a short explanation; MT-bench-style answers run ~100–300 tokens).
DEFAULT_COMPLETION_TOKENS = 400
#: characters per prompt token assumed by the estimate: 3 overestimates English (~4 chars/token).
CHARS_PER_TOKEN = 3.0


@dataclass(frozen=True)
class Prices:
    """``input``/``output``: USD per 1M prompt/completion tokens (None = unknown)."""

    input: float | None = None
    output: float | None = None

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one answer, or None when the prices or the token counts are unknown."""
        price_in, price_out = self.input, self.output
        if price_in is None or price_out is None or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * price_in + completion_tokens * price_out) / 1e6

    def estimate(self, body: dict, completion_tokens: float | None = None) -> float:
        """An upper-leaning estimate (USD) of one request before it is sent.

        Prompt tokens: the request's message characters / :data:`CHARS_PER_TOKEN`;
        completion tokens: ``max_tokens``/``max_completion_tokens`` when the body
        sets one, else the largest completion seen in the run (``completion_tokens``),
        else :data:`DEFAULT_COMPLETION_TOKENS`.
        """
        chars = sum(len(m.get("content") or "") if isinstance(m, dict) else 0
                    for m in body.get("messages") or [])
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        out = limit if isinstance(limit, int) and limit > 0 else (completion_tokens or DEFAULT_COMPLETION_TOKENS)
        return self.cost(math.ceil(chars / CHARS_PER_TOKEN), int(out)) or 0.0


def check_prices(price_in, price_out, max_cost) -> Prices:
    """Validate ``--price-in``/``--price-out``/``--max-cost`` (USD); both prices or neither."""
    for flag, v in (("price_in", price_in), ("price_out", price_out), ("max_cost", max_cost)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise UsageError(f"{shown(flag)} ({quote(v)}) must be a dollar amount >= 0", parameters=parameters_of(flag))
    if (price_in is None) != (price_out is None):
        raise UsageError("`price_in` and `price_out` go together (USD per 1M prompt and completion tokens)",
                         parameters=('price_in', 'price_out'))
    if max_cost is not None and price_in is None:
        raise UsageError("`max_cost` needs the model's prices: `price_in` and `price_out` (USD per 1M tokens)",
                         parameters=('max_cost', 'price_in', 'price_out'))
    return Prices(None if price_in is None else float(price_in), None if price_out is None else float(price_out))


def usage_tokens(body) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` from a chat completion's ``usage``; None when absent or not a
    whole number in ``[0, MAX_TOKENS]`` (a negative count, 10**30, a string)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None

    return plausible_tokens(usage.get("prompt_tokens")), plausible_tokens(usage.get("completion_tokens"))

