"""Argilla batch files load in the real argilla 2.x SDK, offline.

``rg.Settings.from_json`` must load the settings file, and ``dataset.records.log``
must map each written record dict onto the record id, the text fields and the
``item_id`` metadata. ``records.log`` builds its records with
``argilla.records._mapping.IngestedRecordMapper`` (argilla 2.8,
src/argilla/records/_dataset_records.py, ``DatasetRecords._ingest_records``);
we call that same mapper on a local ``rg.Dataset`` — everything ``log`` does
before it sends the records to a server. The SDK's client checks its server on
construction (``APIClient._validate_connection``), which the fixture replaces
by a no-op: nothing is sent anywhere.
"""

from __future__ import annotations

import json
import uuid
import warnings

import _batch_fixture as fx
import numpy as np
import pytest

from planner.batch.assemble import assemble_batch
from planner.formats.writers import write_batch

rg = pytest.importorskip("argilla")

REASONS = ("correctness", "helpfulness", "style", "safety", "other")


@pytest.fixture
def offline_client(monkeypatch):
    from argilla._api import _client

    monkeypatch.setattr(_client.APIClient, "_validate_connection", lambda self: None)
    client = rg.Argilla(api_url="http://127.0.0.1:9", api_key="offline-test")
    old = rg.Argilla._default_client
    rg.Argilla._default_client = client
    yield client
    rg.Argilla._default_client = old


def _batch(**kw):
    opts = {"attention": 0.1, "repeat": 0.05, "overlap": 0.0, "acceptability": 0.15, "both_orders": False}
    opts.update(kw)
    return assemble_batch(fx.planned(2), prompt_text=fx.prompts(), response_text=fx.responses(),
                          rng=np.random.default_rng(3), **opts)


def _mapper(settings, client):
    from argilla.records._mapping import IngestedRecordMapper

    dataset = rg.Dataset(name="planner-test", settings=settings, client=client)
    return IngestedRecordMapper(dataset=dataset, user_id=uuid.uuid4())


@pytest.mark.parametrize("acceptability", [False, True])
def test_settings_load_and_every_record_maps_onto_fields_and_metadata(tmp_path, offline_client, acceptability):
    batch = _batch()
    paths = {p.name: p for p in write_batch(batch, tmp_path / "b", "argilla", reasons=REASONS)}
    stem = "b.acceptability" if acceptability else "b"
    settings = rg.Settings.from_json(tmp_path / f"{stem}.argilla-settings.json")
    names = ["prompt", "response", "question"] if acceptability else ["prompt", "left", "right"]
    assert [f.name for f in settings.fields] == names
    verdict = settings.questions["verdict"]
    assert verdict.labels == (["pass", "fail", "invalid"] if acceptability else ["left", "right", "tie", "invalid"])
    assert settings.questions["reason"].labels == list(REASONS)
    assert settings.questions["reason"].required is False and verdict.required is True
    assert [m.name for m in settings.metadata] == ["item_id"]
    # the SDK serializes what it loaded back to what we wrote (no field lost or renamed)
    written = json.loads(paths[f"{stem}.argilla-settings.json"].read_text(encoding="utf-8"))
    again = settings.serialize()
    assert [q["name"] for q in again["questions"]] == [q["name"] for q in written["questions"]]
    assert [f["settings"] for f in again["fields"]] == [f["settings"] for f in written["fields"]]

    records = json.loads(paths[f"{stem}.json"].read_text(encoding="utf-8"))
    items = {it.item_id: it for it in batch.items if it.is_pairwise != acceptability}
    assert records and len(records) == len(items)
    mapper = _mapper(settings, offline_client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the SDK warns about keys it ignores: there must be none
        built = [mapper(r) for r in records]
    for rec in built:
        it = items[rec.id]
        fields = rec.fields.to_dict()
        assert rec.metadata.to_dict() == {"item_id": it.item_id}
        if acceptability:
            assert fields["prompt"] == it.prompt and fields["response"] == it.left_text
        else:
            assert fields == {"prompt": it.prompt, "left": it.left_text, "right": it.right_text}


def test_old_nested_record_shape_would_have_been_dropped(offline_client, tmp_path):
    # the shape older planners wrote: the SDK ignores both keys and builds a record with no fields
    batch = _batch(acceptability=0.0, attention=0.0, repeat=0.0)
    write_batch(batch, tmp_path / "b", "argilla", reasons=REASONS)
    settings = rg.Settings.from_json(tmp_path / "b.argilla-settings.json")
    mapper = _mapper(settings, offline_client)
    nested = {"id": "it-x", "fields": {"prompt": "p", "left": "l", "right": "r"}, "metadata": {"item_id": "it-x"}}
    with pytest.warns(UserWarning, match="will be ignored"):
        rec = mapper(nested)
    assert rec.fields.to_dict() in ({}, {"prompt": None, "left": None, "right": None})


def test_settings_equal_the_sdk_built_settings(offline_client, tmp_path):
    # the same dataset defined with the SDK's own classes serializes to the same fields/questions/metadata
    write_batch(_batch(acceptability=0.0), tmp_path / "b", "argilla", reasons=REASONS)
    ours = rg.Settings.from_json(tmp_path / "b.argilla-settings.json").serialize()
    theirs = rg.Settings(
        fields=[rg.TextField(name=n, title=n.capitalize(), use_markdown=False) for n in ("prompt", "left", "right")],
        questions=[rg.LabelQuestion(name="verdict", title="Which response is better?",
                                    labels=["left", "right", "tie", "invalid"]),
                   rg.LabelQuestion(name="reason", title="Main reason (required when the verdict is not tie)",
                                    labels=list(REASONS), required=False)],
        metadata=[rg.TermsMetadataProperty(name="item_id", title="Item")],
        guidelines=ours["guidelines"], allow_extra_metadata=False).serialize()
    for key in ("fields", "questions", "metadata"):
        strip = lambda xs: [{k: v for k, v in x.items() if k not in ("id", "inserted_at", "updated_at", "dataset_id")}
                            for x in xs]
        assert strip(ours[key]) == strip(theirs[key]), key
    assert ours["allow_extra_metadata"] is False
