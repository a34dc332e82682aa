"""What the annotation tools need besides the items: Label Studio's labeling configs and tasks, Argilla's
dataset settings and records (the shapes are described in :mod:`planner.formats.writers` and
docs/formats.md, "Batch files").

Both tools ask the same two questions: the ``verdict`` (position verdicts of
:mod:`planner.vocabulary`) and, unless the verdict is a tie, the main ``reason``
from the study's reason codes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.sax.saxutils import quoteattr

from planner.errors import UsageError
from planner.vocabulary import ACCEPTABILITY_VERDICTS, PAIRWISE_VERDICTS

ACCEPTABILITY_QUESTION = "Would you be happy to send this response to a customer? (pass / fail)"
_REASON_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def check_reasons(reasons: Sequence[str]) -> tuple[str, ...]:
    """The study's reason codes as the tools offer them: at least one, unique, letters, digits, ``_`` or ``-``."""
    codes = tuple(reasons)
    if not codes:
        raise UsageError("reason codes: the study defines none (at least one is needed)", parameters=('reasons',))
    for c in codes:
        if not isinstance(c, str) or not _REASON_RE.match(c):
            raise UsageError(f"reason code {c!r} must be letters, digits, '_' or '-'", parameters=('reasons',))
    if len(set(codes)) != len(codes):
        raise UsageError("reason codes must be unique", parameters=('reasons',))
    return codes


def _ls_questions(to_name: str, verdicts: Sequence[str], reasons: Sequence[str], question: str,
                  reason_header: str, reason_when: Sequence[str]) -> str:
    """The ``verdict`` and conditional ``reason`` Choices shared by both configs."""
    codes = check_reasons(reasons)
    verdict_xml = "\n".join(f"    <Choice value={quoteattr(v)}/>" for v in verdicts)
    reason_xml = "\n".join(f"    <Choice value={quoteattr(c)}/>" for c in codes)
    when = ",".join(reason_when)
    return f"""  <Header value={quoteattr(question)}/>
  <Choices name="verdict" toName="{to_name}" choice="single-radio" required="true" showInline="true">
{verdict_xml}
  </Choices>
  <Header value={quoteattr(reason_header)}/>
  <Choices name="reason" toName="{to_name}" choice="single-radio" required="true" showInline="true"
           visibleWhen="choice-selected" whenTagName="verdict" whenChoiceValue="{when}">
{reason_xml}
  </Choices>
"""


def label_studio_config(reasons: Sequence[str]) -> str:
    """Labeling config XML for pairwise items.

    ``verdict`` (left/right/tie/invalid) is required; ``reason`` (the study's
    codes) is shown and required only when the verdict is not ``tie``
    (``visibleWhen="choice-selected"`` on ``verdict`` with
    ``whenChoiceValue="left,right,invalid"``; Label Studio validates a
    ``required`` control only while it is visible).
    """
    questions = _ls_questions("prompt", PAIRWISE_VERDICTS, reasons, "Which response is better?", "Main reason",
                              ("left", "right", "invalid"))
    return f"""<View>
  <Header value="Prompt"/>
  <Text name="prompt" value="$prompt"/>
  <View style="display: flex; gap: 1em;">
    <View style="flex: 1;">
      <Header value="Left"/>
      <Text name="left" value="$left"/>
    </View>
    <View style="flex: 1;">
      <Header value="Right"/>
      <Text name="right" value="$right"/>
    </View>
  </View>
{questions}</View>
"""


def label_studio_acceptability_config(reasons: Sequence[str]) -> str:
    """Labeling config XML for acceptability items (``verdict`` pass/fail/invalid; reason on fail/invalid)."""
    questions = _ls_questions("response", ACCEPTABILITY_VERDICTS, reasons, ACCEPTABILITY_QUESTION,
                              "Main problem", ("fail", "invalid"))
    return f"""<View>
  <Header value="Prompt"/>
  <Text name="prompt" value="$prompt"/>
  <Header value="Response"/>
  <Text name="response" value="$response"/>
{questions}</View>
"""


def ls_tasks(items) -> list[dict]:
    """Label Studio tasks: ``data`` holds only the item id, the prompt and the texts shown."""
    out = []
    for it in items:
        if it.is_pairwise:
            out.append({"data": {"item_id": it.item_id, "prompt": it.prompt, "left": it.left_text,
                                 "right": it.right_text}})
        else:
            out.append({"data": {"item_id": it.item_id, "prompt": it.prompt, "response": it.left_text}})
    return out


def _argilla_field(name: str, title: str) -> dict:
    return {"name": name, "title": title, "description": None, "required": True, "type": "text",
            "settings": {"type": "text", "use_markdown": False}}


def _argilla_label_question(name: str, title: str, labels: Sequence[str], required: bool) -> dict:
    return {"name": name, "title": title, "description": None, "required": required, "type": "label_selection",
            "settings": {"type": "label_selection", "options": [{"text": x, "value": x} for x in labels],
                         "visible_options": None}}


def argilla_settings(reasons: Sequence[str], *, acceptability: bool = False) -> dict:
    """Dataset settings in the shape of argilla 2.x ``rg.Settings.serialize()``.

    ``rg.Settings.from_json(path)`` loads the written file (each field and
    question carries its ``settings`` block, which the SDK's models require).
    """
    codes = list(check_reasons(reasons))
    if acceptability:
        fields = [_argilla_field("prompt", "Prompt"), _argilla_field("response", "Response"),
                  _argilla_field("question", "Question")]
        questions = [
            _argilla_label_question("verdict", ACCEPTABILITY_QUESTION, ACCEPTABILITY_VERDICTS, True),
            _argilla_label_question("reason", "Main problem (required when the verdict is fail or invalid)",
                                    codes, False),
        ]
        guidelines = "Judge the single response: would you send it to a customer as it is?"
    else:
        fields = [_argilla_field(n, n.capitalize()) for n in ("prompt", "left", "right")]
        questions = [
            _argilla_label_question("verdict", "Which response is better?", PAIRWISE_VERDICTS, True),
            _argilla_label_question("reason", "Main reason (required when the verdict is not tie)", codes, False),
        ]
        guidelines = ("Compare the left and the right response to the prompt; choose left, right, tie, or "
                      "invalid when the item cannot be judged. Give the main reason unless it is a tie.")
    return {"guidelines": guidelines, "questions": questions, "fields": fields, "vectors": [],
            "metadata": [{"name": "item_id", "title": "Item", "visible_for_annotators": True,
                          "settings": {"type": "terms", "values": None, "visible_for_annotators": True}}],
            "allow_extra_metadata": False, "mapping": None}


def argilla_records(items) -> list[dict]:
    """Flat records: ``records.log`` maps each key to the field/metadata/id of the same name."""
    out = []
    for it in items:
        if it.is_pairwise:
            out.append({"id": it.item_id, "prompt": it.prompt, "left": it.left_text, "right": it.right_text,
                        "item_id": it.item_id})
        else:
            out.append({"id": it.item_id, "prompt": it.prompt, "response": it.left_text,
                        "question": ACCEPTABILITY_QUESTION, "item_id": it.item_id})
    return out
