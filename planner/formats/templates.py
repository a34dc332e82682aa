"""The LLM judge's prompt contract, shared by the request writer and the output reader.

The writer (:func:`planner.formats.writers.judge_requests`) fills these templates;
the reader (:mod:`planner.formats.judge`) parses the answers they ask for. Both
import them from here, so a reader never imports the writers.

* :data:`DEFAULT_PAIRWISE_TEMPLATE`, :data:`DEFAULT_ACCEPTABILITY_TEMPLATE` and
  :data:`JUDGE_SYSTEM_MESSAGE`: the default prompts;
* :data:`PAIRWISE_FIELDS`, :data:`ACCEPTABILITY_FIELDS` and :func:`check_template`:
  the placeholders a user's own template may use;
* :data:`VERDICT_TOKENS`: the ``[[...]]`` tokens the default templates ask the
  judge to end with, and the position verdict each one means.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from planner.errors import UsageError, parameters_of, shown

JUDGE_SYSTEM_MESSAGE = "You are a careful and impartial evaluator of AI assistant responses."

# MT-bench-style pairwise judging prompt (Zheng et al. 2023, "Judging
# LLM-as-a-Judge with MT-Bench and Chatbot Arena", NeurIPS D&B), with a reason
# code line added. Placeholders: {prompt} {left} {right} {reasons}.
DEFAULT_PAIRWISE_TEMPLATE = """\
Please act as an impartial judge and compare the two responses below to the user question.
Decide which response follows the user's instructions and answers the question better, considering
correctness, helpfulness, relevance, depth and clarity. The order in which the responses are shown
must not influence you, and neither must their length. Do not favour a style or a name.

[User Question]
{prompt}

[The Start of Assistant A's Answer]
{left}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{right}
[The End of Assistant B's Answer]

First explain your comparison briefly. Then write one line "Reason: <code>" with the main reason for your
decision, where <code> is one of: {reasons}.
Finally give your verdict on the last line, exactly in this format: "[[A]]" if assistant A is better,
"[[B]]" if assistant B is better, and "[[C]]" for a tie.
"""

# Single-response acceptability prompt. Placeholders: {prompt} {response} {reasons}.
DEFAULT_ACCEPTABILITY_TEMPLATE = """\
Please act as an impartial judge of the response below to the user question.
Would you be happy to send this response to a customer as it is?

[User Question]
{prompt}

[The Start of the Response]
{response}
[The End of the Response]

First explain your judgment briefly. If the response is not acceptable, write one line "Reason: <code>"
with the main problem, where <code> is one of: {reasons}.
Finally give your verdict on the last line, exactly in this format: "[[PASS]]" if the response is
acceptable, "[[FAIL]]" if it is not.
"""

PAIRWISE_FIELDS = frozenset({"prompt", "left", "right", "reasons"})
ACCEPTABILITY_FIELDS = frozenset({"prompt", "response", "reasons"})
#: the bracketed verdict tokens the default templates ask for (``[[A]]``, ...) -> position verdict
VERDICT_TOKENS = {"A": "left", "B": "right", "C": "tie", "PASS": "pass", "FAIL": "fail"}


def check_template(template: str, *, allowed: frozenset[str] = PAIRWISE_FIELDS,
                   required: Sequence[str] = ("prompt", "left", "right"), option: str = "template") -> str:
    """Validate a ``str.format`` template; :class:`UsageError` names the bad placeholder."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise UsageError(f"{shown(option)}: not a valid template ({exc}); write literal braces as {{{{ and }}}}",
                         parameters=parameters_of(option)) from None
    seen = set()
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if name not in allowed:
            placeholder = "{" + name + "}"
            raise UsageError(f"{shown(option)}: unknown placeholder {placeholder}; allowed: "
                             + ", ".join("{" + a + "}" for a in sorted(allowed)), parameters=parameters_of(option))
        if spec or conv:
            raise UsageError(f"{shown(option)}: placeholder {{{name}}} must not carry a format spec or conversion",
                             parameters=parameters_of(option))
        seen.add(name)
    missing = [r for r in required if r not in seen]
    if missing:
        raise UsageError(f"{shown(option)}: the template lacks the placeholder {{{missing[0]}}}",
                         parameters=parameters_of(option))
    return template


__all__ = ["ACCEPTABILITY_FIELDS", "DEFAULT_ACCEPTABILITY_TEMPLATE", "DEFAULT_PAIRWISE_TEMPLATE",
           "JUDGE_SYSTEM_MESSAGE", "PAIRWISE_FIELDS", "VERDICT_TOKENS", "check_template"]
