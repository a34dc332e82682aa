"""Push batches to Label Studio, pull the annotations back, wait for a batch to be annotated (the
``push``/``pull`` commands and each ``run --annotators-via label-studio`` round).

Each function takes the caller's open study and reaches the study's file by its path only for what
must own its connection or file: the push lock (a lock file), :func:`planner.store.study.ingest` (one
write transaction of its own) and the pulled exports kept under the study folder. The open study is
in autocommit, so it holds no lock while ingest writes, and its later reads see what was stored.

* :func:`push_batch` — create (or reuse) the batch's projects with planner's labeling
  configs (validated first) and import its tasks; tasks whose ``data.item_id``
  is already in the project are not imported again, so pushing twice is safe.
  The study's push lock (``STUDY/locks/label-studio-push.lock``) keeps a second
  ``push`` (or ``run --annotators-via``) out while one runs: it is refused,
  naming the holder. Before a project is created its **intent** (a random token,
  also written into the project's description) is saved in the state; a push
  stopped between the server creating the project and planner recording it
  finds the project by that token instead of creating another one. Before an
  import the intent to import is saved too, and the project's tasks are
  listed (by id) so that only the missing ones are imported.
* :func:`pull_annotations` — export every project of the study (or of one batch) through
  the snapshot export API with ``completed_by`` expanded (the JSON then names
  each annotator's e-mail), keep each export as
  ``STUDY/label-studio/pull-<UTC time>-project-<id>.json`` and ingest them with
  :func:`planner.store.study.ingest` (incremental; edits refused unless
  ``accept_changes``).
* :func:`wait_for_annotations` — poll a pushed batch's tasks until each has an
  annotation (or a skip) or a timeout, then pull once.

Connector state lives in the study as the artifact ``label-studio.json``
(no schema change)::

    {"servers": {"http://host:8080": {
        "projects": {"pairwise": {"id": 3, "title": …, "config_sha256": …},
                     "acceptability@alice": {…}},
        "batches": {"1": {"pairwise": 3, "acceptability@alice": 4}},
        "intents": {"pairwise@bob": {"token": …, "title": …, "config_sha256": …, "at": …}},
        "imports": {"3": {"batch": 1, "items": 40, "at": …}}}}}

``intents`` and ``imports`` hold only what an interrupted push left undone.

Project keys are ``pairwise`` / ``acceptability``, with ``@<annotator>`` for
``per_annotator`` projects. Only the URL (never the key) is stored.

Annotator identity: the community edition has no task assignment, so with
``per_annotator`` each ``--annotators`` name gets its own project holding only
its items. Ingest maps a Label Studio identity to a planned name when the
e-mail's local part (or the username, looked up through ``GET /api/users/``
and passed as an explicit alias) equals it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DataError, UsageError
from planner.formats.label_studio import NOT_PUSHED

__all__ = ["ARTIFACT", "MAX_POLL_S", "PULL_DIR", "ProjectPush", "PullResult", "PushResult", "WaitResult",
           "batch_tasks", "check_wait", "project_by_token", "pull_annotations", "push_batch", "wait_for_annotations",
           "waiting_items"]

ARTIFACT = "label-studio.json"
PULL_DIR = "label-studio"
KINDS = ("pairwise", "acceptability")
NOT_ANNOTATED = "task without annotations"  # the reader's skip cause; counted as unannotated, not skipped
DESCRIPTION = "Created by planner push; tasks are blinded comparison items."
MAX_POLL_S = 86400.0


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class ProjectPush:
    key: str
    id: int
    title: str
    created: bool
    imported: int
    already: int


@dataclass(frozen=True)
class PushResult:
    batch: int
    url: str
    projects: tuple[ProjectPush, ...]
    notes: tuple[str, ...] = ()

    @property
    def imported(self) -> int:
        return sum(p.imported for p in self.projects)

    @property
    def already(self) -> int:
        return sum(p.already for p in self.projects)


@dataclass(frozen=True)
class PullResult:
    """``skipped``: annotations without a verdict (skips/cancellations); tasks nobody annotated yet are
    not skips — ``unannotated`` counts the items still without a judgment in the store."""

    url: str
    files: tuple[str, ...]
    new: int
    already: int
    skipped: int
    changed: int
    replaced: int
    unannotated: int
    aliases: tuple[str, ...] = ()
    ingest: object = None  # planner.store.ingest.IngestResult
    notes: tuple[str, ...] = ()   # what ingest said (identities kept raw, tasks planner did not push)


@dataclass(frozen=True)
class WaitResult:
    """``done``: every item of the batch has an annotation or a skip in Label Studio (before ``timeout``)."""

    done: bool
    waiting: int
    polls: int
    seconds: float
    pull: PullResult | None = None


# ------------------------------------------------------------------- state
def _load_state(study) -> dict:
    raw = study.load_artifact(ARTIFACT)
    if raw is None:
        return {"servers": {}}
    try:
        state = json.loads(raw)
        assert isinstance(state.get("servers"), dict)
    except (ValueError, AssertionError, AttributeError):
        raise DataError(f"the study's {ARTIFACT} artifact is not the connector state planner writes") from None
    return state


def _server(state: dict, url: str) -> dict:
    srv = state["servers"].setdefault(url, {})
    srv.setdefault("projects", {})
    srv.setdefault("batches", {})
    return srv


def _save_state(study, state: dict) -> None:
    study.save_artifact(ARTIFACT, json.dumps(state, indent=1, sort_keys=True).encode("utf-8"))


def _client(client):
    if client is not None:
        return client
    from planner.connectors.label_studio import LabelStudioClient

    return LabelStudioClient.from_env()


def _batch_id(study, batch: int | None) -> int:
    infos = [b for b in study.batches() if not b.voided]
    if batch is None:
        if not infos:
            raise UsageError("the study has no batch to push yet; run next-batch `format` label-studio first",
                             parameters=('format',))
        return infos[-1].id
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise UsageError(f"`batch` ({batch!r}) must be a batch id (a whole number >= 1)", parameters=('batch',))
    if batch not in {b.id for b in study.batches()}:
        raise UsageError(f"`batch` ({batch}): the study has no such batch", parameters=('batch',))
    return batch


# -------------------------------------------------------------------- push
def batch_tasks(study, batch_id: int, per_annotator: bool) -> dict[str, tuple[str, list[dict]]]:
    """``{project key: (label config, tasks)}`` of a recorded batch, rendered as it was issued."""
    from planner.services.batch_files import render_recorded

    info = next(b for b in study.batches() if b.id == batch_id)
    fmt = (info.manifest.get("rendering") or {}).get("format")
    if fmt != "label-studio":
        raise UsageError(f"batch {batch_id} was written as {fmt or 'an unknown format'}; push needs a batch "
                         "written with next-batch `format` label-studio", parameters=('format',))
    files, _ = render_recorded(study, batch_id)
    configs, tasks = {}, []
    for path, data in files:
        name = Path(path).name
        if name.endswith(".acceptability.label-config.xml"):
            configs["acceptability"] = data.decode("utf-8")
        elif name.endswith(".label-config.xml"):
            configs["pairwise"] = data.decode("utf-8")
        elif name.endswith(".json"):
            tasks.extend(json.loads(data))
    owner = {it.item_id: it.annotator for it in study.items(batch_id)}
    if per_annotator and not any(owner.values()):
        raise UsageError(f"`per_annotator_projects`: batch {batch_id} names no annotators "
                         "(next-batch `annotators` NAME,NAME)", parameters=('per_annotator_projects', 'annotators'))
    out: dict[str, tuple[str, list[dict]]] = {}
    for t in tasks:
        kind = "acceptability" if "response" in t["data"] else "pairwise"
        who = owner.get(t["data"]["item_id"]) if per_annotator else None
        key = kind + (f"@{who}" if who else "")
        out.setdefault(key, (configs[kind], []))[1].append(t)
    return out


def _title(base: str, key: str) -> str:
    kind, _, who = key.partition("@")
    return f"{base} — {kind}" + (f" — {who}" if who else "")


def _stamp_now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def _item_of(task: dict):
    data = task.get("data")
    return data.get("item_id") if isinstance(data, dict) else None


def project_by_token(client, token: str) -> int | None:
    """The project whose description carries an intent ``token`` (a push stopped after creating it)."""
    for p in client.projects():
        desc, pid = p.get("description"), p.get("id")
        if isinstance(desc, str) and token in desc and isinstance(pid, int) and not isinstance(pid, bool):
            return pid
    return None


def _project_for(client, srv: dict, key: str, config: str, base_title: str, notes: list,
                 save: Callable[[], None]) -> tuple[int, str, bool]:
    """The stored project for ``key`` when it still exists with the same config, the project an interrupted
    push created (found by its intent token), else a new one (its intent saved before it is created)."""
    sha = hashlib.sha256(config.encode("utf-8")).hexdigest()
    got = srv["projects"].get(key)
    if got and got.get("config_sha256") == sha:
        if client.project(got["id"]) is not None:
            return int(got["id"]), got["title"], False
        notes.append(f"project {got['id']} ({key}) no longer exists on the server; creating a new one")
    intents = srv.setdefault("intents", {})
    intent = intents.get(key)
    if intent and intent.get("config_sha256") == sha:
        pid = project_by_token(client, intent["token"])
        if pid is not None:
            srv["projects"][key] = {"id": pid, "title": intent["title"], "config_sha256": sha}
            del intents[key]
            save()
            notes.append(f"project {pid} ({key}) was created by a push that was stopped before recording it; "
                         "found by planner's intent record and reused")
            return pid, intent["title"], False
    client.validate_config(config)
    title, token = _title(base_title, key), uuid.uuid4().hex
    intents[key] = {"token": token, "title": title, "config_sha256": sha, "at": _stamp_now()}
    save()  # the intent before the paid step: a rerun can find what the server made
    pid = client.create_project(title, config, f"{DESCRIPTION} (planner push {token})")
    srv["projects"][key] = {"id": pid, "title": title, "config_sha256": sha}
    del intents[key]
    return pid, title, True


def _import(client, srv: dict, pid: int, batch_id: int, tasks: list[dict], created: bool, notes: list,
            save: Callable[[], None]) -> int:
    """Import the tasks the project lacks (listed by id first, unless it was created just now)."""
    imports = srv.setdefault("imports", {})
    if str(pid) in imports:
        notes.append(f"an earlier push was stopped while importing into project {pid}; tasks already there "
                     "are not imported again")
    have = {_item_of(t) for t in client.tasks(pid)} if not created or str(pid) in imports else set()
    missing = [t for t in tasks if t["data"]["item_id"] not in have]
    if missing:
        imports[str(pid)] = {"batch": batch_id, "items": len(missing), "at": _stamp_now()}
        save()
        client.import_tasks(pid, missing)
    imports.pop(str(pid), None)
    save()
    return len(missing)


def push_batch(study, *, batch: int | None = None, project_title: str | None = None,
               per_annotator: bool = False, client=None) -> PushResult:
    """Push a batch of the open ``study`` to Label Studio (see the module docstring); safe to repeat, one
    push at a time (the study's push lock)."""
    from planner.store.locks import hold, holder_note

    client = _client(client)
    with hold(study.path, "label-studio-push", "the study's Label Studio push") as held:
        note = holder_note(held, "the study's Label Studio push")
        return _push(study, batch, project_title, per_annotator, client, [note] if note else [])


def _push(study, batch, project_title, per_annotator, client, notes: list[str]) -> PushResult:
    out: list[ProjectPush] = []
    batch_id = _batch_id(study, batch)
    groups = batch_tasks(study, batch_id, per_annotator)
    state = _load_state(study)
    srv = _server(state, client.url)

    def save() -> None:
        _save_state(study, state)

    base = project_title or f"planner {Path(study.path).resolve().name}"
    for key in sorted(groups):
        config, tasks = groups[key]
        pid, title, created = _project_for(client, srv, key, config, base, notes, save)
        srv["batches"].setdefault(str(batch_id), {})[key] = pid
        save()  # before importing: a crash never orphans a project
        n = _import(client, srv, pid, batch_id, tasks, created, notes, save)
        out.append(ProjectPush(key, pid, title, created, n, len(tasks) - n))
    return PushResult(batch_id, client.url, tuple(out), tuple(notes))


# -------------------------------------------------------------------- pull
def _projects(srv: dict, batch_id: int | None) -> list[int]:
    if batch_id is not None:
        got = srv["batches"].get(str(batch_id))
        if not got:
            raise UsageError(f"`batch` ({batch_id}) was not pushed to this Label Studio; run planner push first",
                             parameters=('batch',))
        return sorted(set(got.values()))
    return sorted({pid for b in srv["batches"].values() for pid in b.values()})


def _username_aliases(client, planned: set[str]) -> dict[str, str]:
    """``{e-mail: username}`` for LS users whose username is a planned name but whose e-mail local part is not."""
    out: dict[str, str] = {}
    try:
        users = client.users()
    except DataError:  # listing users may be restricted; e-mail local parts still map
        return out
    for u in users:
        email, name = u.get("email"), u.get("username")
        if isinstance(email, str) and name in planned and email.split("@")[0] != name:
            out[email] = name
    return out


def _stamp() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


def pull_annotations(study, *, batch: int | None = None, accept_changes: bool = False, client=None) -> PullResult:
    """Export the open ``study``'s projects (or one batch's), keep the raw exports, ingest them incrementally."""
    from planner.store.study import ingest

    client = _client(client)
    study_path = study.path
    batch_id = None if batch is None else _batch_id(study, batch)
    srv = _server(_load_state(study), client.url)
    issued = study.items()
    planned = {it.annotator for it in issued if it.annotator}
    known = {it.item_id for it in issued}
    pids = _projects(srv, batch_id)
    if not pids:
        raise UsageError(f"nothing was pushed to {client.url} from this study yet; run planner push first",
                         parameters=('batch',))
    from planner.connectors.guard import redact
    from planner.formats.staging import write_atomically, write_failure

    folder = Path(study_path) / PULL_DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise write_failure(PULL_DIR, folder, exc) from None
    files = []
    stamp = _stamp()
    for pid in pids:
        data = client.snapshot_export(pid, title=f"planner pull {stamp}")
        data = redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        files += write_atomically([(folder / f"pull-{stamp}-project-{pid}.json", data)], option=PULL_DIR)
    res = ingest(study_path, files, format="label-studio", accept_changes=accept_changes,
                 annotator_map=_username_aliases(client, planned) or None, reader_options={"items": known})
    skipped = sum(n for f in res.files for why, n in f.skipped.items() if why != NOT_ANNOTATED)
    notes = [n for f in res.files for n in f.notes]
    foreign = sum(f.skipped.get(NOT_PUSHED, 0) for f in res.files)
    if foreign:   # one stray task must not block every pull of its project
        notes.append(f"{foreign} task(s) in the project(s) hold no item planner issued (imported by hand?): "
                     "skipped, counted as skipped")
    return PullResult(client.url, tuple(str(f) for f in files), res.rows, res.already,
                      skipped, sum(f.changed for f in res.files),
                      sum(f.replaced for f in res.files), _unannotated(study, batch_id),
                      tuple(a for f in res.files for a in f.aliases), res, tuple(notes))


def _unannotated(study, batch_id: int | None) -> int:
    """The batch's (or every batch's) items still without a judgment, read after the ingest."""
    return sum(b.pending for b in study.batches() if batch_id is None or b.id == batch_id)


# -------------------------------------------------------------------- wait
def waiting_items(study, batch: int, *, client=None) -> int:
    """How many of the batch's pushed tasks have neither an annotation nor a skip in Label Studio yet."""
    client = _client(client)
    batch_id = _batch_id(study, batch)
    srv = _server(_load_state(study), client.url)
    items = {it.item_id for it in study.items(batch_id)}
    seen: set[str] = set()
    count = lambda v: v if isinstance(v, int) and not isinstance(v, bool) else 0  # noqa: E731
    for pid in _projects(srv, batch_id):
        for t in client.tasks(pid):
            item = _item_of(t)
            if item in items and count(t.get("total_annotations")) + count(t.get("cancelled_annotations")) > 0:
                seen.add(item)
    return len(items - seen)


def check_wait(poll, timeout) -> None:
    """``poll`` seconds in (0, 1 day]; ``timeout`` seconds >= 0 (``inf``: wait until done)."""
    ok_poll = isinstance(poll, (int, float)) and not isinstance(poll, bool) and math.isfinite(poll) \
        and 0 < poll <= MAX_POLL_S
    if not ok_poll:
        raise UsageError(f"`poll` ({poll!r}) must be a number of seconds in (0, {MAX_POLL_S:g}]",
                         parameters=('poll',))
    if not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout >= 0):
        raise UsageError(f"`wait_timeout` ({timeout!r}) must be a number of seconds >= 0 (inf: until done)",
                         parameters=('wait_timeout',))


def wait_for_annotations(study, batch: int, *, timeout: float = 3600.0, poll: float = 30.0,
                         on_wait: Callable[[int, float], None] | None = None, accept_changes: bool = False,
                         client=None, sleep: Callable[[float], None] | None = None,
                         clock: Callable[[], float] = time.monotonic,
                         stop: threading.Event | None = None) -> WaitResult:
    """Poll until every item of ``batch`` is annotated (or skipped) in Label Studio, or ``timeout`` seconds
    (``inf``: until done), or ``stop`` is set (Ctrl-C: the pause between polls wakes at once).

    ``on_wait(waiting, elapsed_seconds)`` is called after each poll that still
    finds items waiting ("waiting for N items"). Whatever the outcome, the
    projects are pulled once at the end (so a timeout keeps what was done);
    ``WaitResult.waiting`` is then the store's count of the batch's items
    still without a judgment.
    """
    check_wait(poll, timeout)
    client = _client(client)
    pause: Callable[[float], object] = sleep or (stop.wait if stop is not None else time.sleep)
    t0, polls = clock(), 0
    while True:
        waiting = waiting_items(study, batch, client=client)
        polls += 1
        elapsed = clock() - t0
        if waiting == 0 or elapsed >= timeout or (stop is not None and stop.is_set()):
            break
        if on_wait is not None:
            on_wait(waiting, elapsed)
        pause(min(poll, max(timeout - elapsed, 0.0)))
        if stop is not None and stop.is_set():
            break
    res = pull_annotations(study, batch=batch, accept_changes=accept_changes, client=client)
    return WaitResult(waiting == 0, res.unannotated, polls, clock() - t0, res)
