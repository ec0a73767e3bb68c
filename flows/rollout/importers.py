"""Land trajectories recorded elsewhere in the lake's `trajectories` and `steps` tables.

Formats, detected per path and documented in IMPORT_FORMATS.md: our own schema (JSONL, or Parquet with
a nested `steps` column or as a *trajectories* / *steps* pair), a Qwen-CUA-style run directory
(run.json, events.jsonl, screenshots/), and GUI-Odyssey episode JSON. Rows mean what they mean for our
own rollouts (flows/rollout/rollout.py). A trajectory lands whole or not at all: one bad step sends the
whole trajectory to quarantine with that step's reason. Trajectory ids hash each record's source
content and index, so importing the same input again adds nothing.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import io
import json
import struct
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from flows.rollout.foreign_formats import (
    ForeignStepError,
    Screen,
    convert,
    is_transcript,
    kind_of,
    transcript_steps,
)
from lake import TABLES, Lake, utcnow
from sandboxes.action_parsing import parse_model_output
from sandboxes.actions import (
    ACTION_NAMES,
    Action,
    LongPress,
    Swipe,
    SystemButton,
    Tap,
    Terminate,
    Type,
    parse_actions,
)

TRAJECTORY, STEP = TABLES["trajectories"], TABLES["steps"]
ENDED = ("terminated", "max_steps", "env_error")
IMPORTED_POLICY = "imported"
_COMPUTED = {"trajectory_id", "num_steps", "run_id", "recorded_at"}  # never taken from a source
_ERROR_STATUSES = {"error", "env_error", "exception", "crash", "crashed"}
_FINAL_STATUSES = {"success", "succeeded", "failure", "failed", "fail", "done", "completed", "finished"}
_PNG = b"\x89PNG\r\n\x1a\n"
# Caps on what one import reads (module attributes, so a deployment or a test can change them): a record
# (a JSONL line, a .json file, run.json / events.jsonl) larger than MAX_RECORD_BYTES is quarantined unread;
# so is a screenshot file above MAX_IMAGE_BYTES. A JSONL file is streamed line by line, never read whole.
MAX_RECORD_BYTES = 64 * 2**20
MAX_IMAGE_BYTES = 32 * 2**20
MAX_IMAGE_PIXELS = 64_000_000  # a 8000x8000 screenshot; more is a decompression bomb, not a screen
_INSTRUCTION_KEYS = ("instruction", "goal", "task", "confirmed_task", "intent")


class Reject(Exception):
    """Why a record cannot land; `code` leads the quarantine reason so rejects can be counted by kind."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail


@dataclass
class ImportReport:
    """What one import call did; records_in == accepted + quarantined + skipped always holds."""

    run_id: str
    records_in: int = 0
    accepted: int = 0
    skipped: int = 0  # already in the lake: landed, or quarantined for the same reason, by an earlier run
    quarantined: Counter[str] = field(default_factory=Counter)  # reason code -> records
    steps: int = 0  # step rows landed with the accepted trajectories

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())

    @property
    def balanced(self) -> bool:
        return self.records_in == self.accepted + self.quarantined_total + self.skipped


@dataclass
class _Step:
    """One model turn as read from a source, before it becomes a steps row."""

    index: int
    actions: list[Action]
    raw_output: str
    format_error: str | None = None
    screenshot: bytes | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # other steps columns the source gave


@dataclass
class Episode:
    """A converted record: its rows, and the screenshots to store only once the record is accepted."""

    trajectory: dict[str, Any]
    steps: list[dict[str, Any]]
    blobs: list[bytes]


@dataclass
class Candidate:
    """One source record: its trajectory id, where it came from, and how to convert it (or why not)."""

    key: str  # the trajectory id it lands under; also its key in quarantine
    source: str
    record: Any  # kept in quarantine when the record is rejected
    build: Callable[[], Episode]
    table: str = "trajectories"  # the table a rejected record is quarantined against


@dataclass
class _Context:
    """What every conversion needs: one run id and one recorded_at for the whole import call."""

    lake: Lake
    run_id: str
    now: dt.datetime


Reader = Callable[[Path, _Context], Iterator[Candidate]]


# ---- the entry point -------------------------------------------------------------------------------


def import_paths(lake: Lake, paths: list[Path], run_id: str | None = None) -> ImportReport:
    """Land every trajectory in `paths` once; bad records go to quarantine with a reason, none are lost."""
    ctx = _Context(lake, run_id or f"import-{uuid.uuid4().hex}", utcnow())
    sources = _sources(paths)  # every argument is understood before anything is written
    landed, rejected = _landed_ids(lake, ctx.run_id), _quarantined_keys(lake, ctx.run_id)
    report = ImportReport(ctx.run_id)
    for path, reader in sources:
        _import_source(ctx, path, reader(path, ctx), landed, rejected, report)
    return report


def _import_source(ctx: _Context, path: Path, candidates: Iterator[Candidate], landed: set[str],
                   rejected: set[tuple[str, str]], report: ImportReport) -> None:
    """Convert one source's records, then write them as one batch named after the source."""
    episodes: list[Episode] = []
    bad: dict[str, list[tuple[dict, str]]] = defaultdict(list)
    for cand in candidates:
        report.records_in += 1
        if cand.key in landed:
            report.skipped += 1
            continue
        try:
            episode = _converted(cand)
        except Reject as exc:
            if (cand.key, exc.code) in rejected:
                report.skipped += 1
                continue
            rejected.add((cand.key, exc.code))
            report.quarantined[exc.code] += 1
            bad[cand.table].append(({"import_key": cand.key, "source": cand.source, "record": cand.record}, str(exc)))
            continue
        landed.add(cand.key)
        episodes.append(episode)
        report.accepted += 1
        report.steps += len(episode.steps)
    _write(ctx, path, episodes, bad)


def _write(ctx: _Context, path: Path, episodes: list[Episode], bad: dict[str, list[tuple[dict, str]]]) -> None:
    """Blobs, then steps, then trajectories: a trajectory row only exists once all it points to does."""
    batch = f"{path.name}-{_digest(str(path.resolve()))[:10]}"
    for blob in (b for e in episodes for b in e.blobs):
        ctx.lake.put_blob(blob)
    ctx.lake.write("steps", [s for e in episodes for s in e.steps], ctx.run_id, batch)
    ctx.lake.write("trajectories", [e.trajectory for e in episodes], ctx.run_id, batch)
    for table, rows in bad.items():  # a batch of its own, so Lake.write's quarantine file never clobbers it
        ctx.lake.quarantine(table, str(path), rows, ctx.run_id, f"{batch}-rejected")


def _converted(cand: Candidate) -> Episode:
    """Build a record; any surprise in the data is a rejection too, never a crashed import."""
    try:
        episode = cand.build()
    except Reject:
        raise
    except Exception as exc:  # e.g. an unreadable screenshot file: the record's fault, not the run's
        raise Reject("unreadable_record", f"{type(exc).__name__}: {exc}") from None
    _check_schema(episode)
    return episode


def _check_schema(episode: Episode) -> None:
    """Rows that fit the schema, so Lake.write never drops single rows and splits a trajectory."""
    try:
        pa.Table.from_pylist([episode.trajectory], schema=TRAJECTORY)
        pa.Table.from_pylist(episode.steps, schema=STEP)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise Reject("schema_mismatch", str(exc)) from None


def _landed_ids(lake: Lake, run_id: str) -> set[str]:
    """Trajectory ids other runs landed; this run's own files are rewritten on a retry, not skipped."""
    if not lake.files("trajectories"):
        return set()
    rows = lake.query("SELECT trajectory_id FROM trajectories WHERE run_id IS DISTINCT FROM ?", [run_id])
    return {r["trajectory_id"] for r in rows}


def _quarantined_keys(lake: Lake, run_id: str) -> set[tuple[str, str]]:
    """(record key, reason code) pairs other imports quarantined, so the same bad input is not re-added."""
    if not lake.files("quarantine"):
        return set()
    rows = lake.query(
        "SELECT json_extract_string(record_json, '$.import_key') AS key, reason FROM quarantine "
        "WHERE run_id IS DISTINCT FROM ? AND json_extract_string(record_json, '$.import_key') IS NOT NULL",
        [run_id],
    )
    return {(r["key"], r["reason"].split(": ", 1)[0]) for r in rows}


# ---- format detection ------------------------------------------------------------------------------


def _sources(paths: list[Path]) -> list[tuple[Path, Reader]]:
    """Each argument's reader, from its shape; a Parquet pair is read once whichever halves are named."""
    sources: dict[Path, tuple[Path, Reader]] = {}
    for arg in map(Path, paths):
        path, reader = _detect(arg)
        sources.setdefault(path.resolve(), (path, reader))
    return list(sources.values())


def _detect(path: Path) -> tuple[Path, Reader]:
    """The format of one path, by its shape alone; anything else is the caller's mistake and raises."""
    if path.is_dir():
        if (path / "run.json").is_file():
            return path, _read_qwen_run
        raise ValueError(f"{path}: a directory is imported only as a Qwen-CUA run, and it has no run.json")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if path.suffix == ".jsonl":
        return path, _read_jsonl
    if path.suffix == ".json":
        return path, _read_json
    if path.suffix == ".parquet":
        if _is_steps_half(path) and (partner := _partner(path)).is_file():
            return partner, _read_parquet
        return path, (_read_orphan_steps if _is_steps_half(path) else _read_parquet)
    raise ValueError(f"{path}: unsupported format; expected a run directory, .jsonl, .parquet or .json")


def _is_steps_half(path: Path) -> bool:
    """A *steps*.parquet is only ever read through its *trajectories* partner."""
    return "steps" in path.name and "trajectories" not in path.name


def _partner(path: Path) -> Path:
    """The other half of a *trajectories*.parquet / *steps*.parquet pair."""
    if _is_steps_half(path):
        return path.with_name(path.name.replace("steps", "trajectories"))
    return path.with_name(path.name.replace("trajectories", "steps"))


# ---- readers: one Candidate per source record ------------------------------------------------------


def _read_jsonl(path: Path, ctx: _Context) -> Iterator[Candidate]:
    """Our schema, one trajectory per line; a line that is not JSON is still a record (to quarantine). The
    file is streamed: a line longer than MAX_RECORD_BYTES is skipped over in chunks and quarantined as
    `line_too_long`, keyed by its first MAX_RECORD_BYTES bytes and its line number."""
    with path.open("rb") as fh:
        for number, (line, whole) in enumerate(_capped_lines(fh, MAX_RECORD_BYTES), 1):
            if whole and not line.strip():
                continue
            key, source = _trajectory_id(line, number), f"{path}:{number}"
            if not whole:
                detail = f"line {number} is longer than {MAX_RECORD_BYTES} bytes (the cap); it was not read"
                yield Candidate(key, source, {"head": line[:200].decode("utf-8", "replace")}, _failing("line_too_long", detail))
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                yield Candidate(key, source, line.decode("utf-8", "replace"), _failing("invalid_json", str(exc)))
                continue
            yield Candidate(key, source, record, partial(_ours, record, path.parent, ctx, key))


def _capped_lines(fh, cap: int) -> Iterator[tuple[bytes, bool]]:
    """(line without its newline, whether it fit the cap); an over-long line yields its first `cap` bytes
    and the rest is read past in chunks, so memory never holds more than `cap` bytes of it."""
    while True:
        line = fh.readline(cap + 1)
        if not line:
            return
        if len(line) <= cap or line.endswith(b"\n"):
            yield line.rstrip(b"\r\n"), True
            continue
        head = line[:cap]
        while line and not line.endswith(b"\n"):
            line = fh.readline(2**20)
        yield head, False


def _read_parquet(path: Path, ctx: _Context) -> Iterator[Candidate]:
    """Our schema in Parquet: a nested `steps` column, or a *steps* partner file joined on trajectory_id."""
    try:
        rows = pq.read_table(path).to_pylist()
        partner = _partner(path)
        paired = "trajectories" in path.name and partner.is_file()
        step_rows = pq.read_table(partner).to_pylist() if paired else []
    except (OSError, pa.ArrowException) as exc:
        yield _unreadable(path, exc)
        return
    by_trajectory: dict[Any, list[dict]] = defaultdict(list)
    for row in step_rows:
        by_trajectory[row.get("trajectory_id")].append(row)
    for index, row in enumerate(rows):
        if paired:
            row = row | {"steps": by_trajectory.get(row.get("trajectory_id"), [])}
        key = _trajectory_id(_canonical(row), index)
        yield Candidate(key, f"{path}#{index}", row, partial(_ours, row, path.parent, ctx, key))
    linked = {row.get("trajectory_id") for row in rows}
    yield from _orphans(partner, [(i, r) for i, r in enumerate(step_rows) if r.get("trajectory_id") not in linked])


def _read_orphan_steps(path: Path, ctx: _Context) -> Iterator[Candidate]:
    """A *steps*.parquet with no *trajectories* partner: every row is a step without a trajectory."""
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowException) as exc:
        yield _unreadable(path, exc)
        return
    yield from _orphans(path, list(enumerate(rows)))


def _orphans(path: Path, rows: list[tuple[int, dict]]) -> Iterator[Candidate]:
    """Steps no trajectory claims: each is a record, counted and quarantined against `steps`."""
    for index, row in rows:
        detail = f"no trajectory {row.get('trajectory_id')!r} for this step"
        key = _trajectory_id(_canonical(row), index)
        yield Candidate(key, f"{path}#{index}", row, _failing("orphan_step", detail), table="steps")


def _unreadable(path: Path, exc: Exception) -> Candidate:
    """A file that cannot be read at all still counts as one record, so the report shows it."""
    key = _trajectory_id(path.read_bytes(), 0)
    return Candidate(key, str(path), {"path": str(path)}, _failing("unreadable_file", f"{type(exc).__name__}: {exc}"))


def _read_qwen_run(path: Path, ctx: _Context) -> Iterator[Candidate]:
    """A Qwen-CUA run directory is one record, keyed by its run.json and events.jsonl (not screenshots)."""
    events = path / "events.jsonl"
    sizes = {f.name: f.stat().st_size for f in (path / "run.json", events) if f.is_file()}
    if any(n > MAX_RECORD_BYTES for n in sizes.values()):
        key = _trajectory_id(json.dumps(sizes, sort_keys=True).encode() + str(path).encode(), 0)
        detail = f"{sizes} is over the {MAX_RECORD_BYTES}-byte cap for one record; it was not read"
        yield Candidate(key, str(path), {"path": str(path), "bytes": sizes}, _failing("record_too_large", detail))
        return
    run_bytes, event_bytes = (path / "run.json").read_bytes(), events.read_bytes() if events.is_file() else b""
    key = _trajectory_id(run_bytes + b"\0" + event_bytes, 0)
    record = {"run.json": run_bytes.decode("utf-8", "replace"), "events.jsonl": event_bytes.decode("utf-8", "replace")}
    yield Candidate(key, str(path), record, partial(_qwen_run, path, ctx, key))


def _read_json(path: Path, ctx: _Context) -> Iterator[Candidate]:
    """A .json file is one episode, keyed by its bytes: GUI-Odyssey's (it has `task_info` / `device_info`),
    else our schema or a foreign one (BrowserGym, Mind2Web, AITW, computer-use transcripts)."""
    size = path.stat().st_size
    if size > MAX_RECORD_BYTES:
        key = _trajectory_id(f"{path.name}:{size}".encode(), 0)
        detail = f"{size} bytes is over the {MAX_RECORD_BYTES}-byte cap for one record; it was not read"
        yield Candidate(key, str(path), {"path": str(path), "bytes": size}, _failing("record_too_large", detail))
        return
    content = path.read_bytes()
    key = _trajectory_id(content, 0)
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and "task_info" not in data and "device_info" not in data:
        yield Candidate(key, str(path), data, partial(_ours, data, path.parent, ctx, key))
        return
    yield Candidate(key, str(path), content.decode("utf-8", "replace"), partial(_odyssey, content, path, ctx, key))


# ---- our schema --------------------------------------------------------------------------------------


def _ours(record: Any, base: Path, ctx: _Context, key: str) -> Episode:
    """Our schema: the trajectories columns (plus `instruction`) and `steps` holding the steps columns."""
    if not isinstance(record, dict):
        raise Reject("wrong_type:record", f"expected an object, got {type(record).__name__}")
    if "steps" not in record and "step_index" in record:
        raise Reject("orphan_step", "a step record with no trajectory around it")
    said = None
    if is_transcript(record):
        try:
            steps, said = transcript_steps(record)
        except ForeignStepError as exc:
            raise Reject(exc.code, exc.detail) from None
    elif record.get("steps") is None:
        raise Reject("missing_field:steps", "a trajectory needs a `steps` list (it may be empty)")
    else:
        steps = _typed_list(record["steps"], "steps")
    trajectory = _typed({k: v for k, v in record.items() if k != "instruction"}, TRAJECTORY, skip=_COMPUTED)
    name = next((k for k in _INSTRUCTION_KEYS if isinstance(record.get(k), str)), "instruction")
    instruction = _checked_type(record.get(name), str, name) or said
    screen = _screen(record)
    built = _each_step(steps, lambda step, i: _our_step(step, i, base, ctx.lake, screen))
    return _episode(ctx, key, trajectory, built, instruction)


def _screen(record: dict) -> Screen:
    """The screen size pixel coordinates are relative to: `screen_width`/`screen_height`, or a `viewport`
    {width, height}, or `screen` [width, height]."""
    viewport = record.get("viewport") if isinstance(record.get("viewport"), dict) else {}
    pair = record.get("screen") if isinstance(record.get("screen"), list) and len(record["screen"]) == 2 else [None, None]
    width = record.get("screen_width") or viewport.get("width") or pair[0]
    height = record.get("screen_height") or viewport.get("height") or pair[1]
    return Screen(_checked_type(width, int, "screen_width"), _checked_type(height, int, "screen_height"))


def _our_step(record: Any, position: int, base: Path, lake: Lake, screen: Screen) -> _Step:
    """One step: actions given (or parsed from raw_output, or read from a foreign format), the screenshot
    by path, base64 or lake sha."""
    if not isinstance(record, dict):
        raise Reject("wrong_type:steps", f"a step is a {type(record).__name__}, not an object")
    kind = kind_of(record)
    if kind is not None:
        return _foreign_step(kind, record, position, base, lake, screen)
    fields = _typed(record, STEP, skip={"trajectory_id", "run_id"})
    index = position if fields["step_index"] is None else fields["step_index"]
    actions, raw_output, format_error = _our_actions(record, fields)
    return _Step(index, actions, raw_output, format_error, _our_screenshot(record, fields, base, lake), fields)


def _foreign_step(kind: str, record: dict, position: int, base: Path, lake: Lake, screen: Screen) -> _Step:
    """A step in another agent's log format (foreign_formats); columns of ours it also has are kept."""
    ours = {k: v for k, v in record.items() if k in STEP.names and k not in ("url", "error")}
    fields = _typed(ours, STEP, skip={"trajectory_id", "run_id"})
    try:
        step = convert(kind, record, screen)
    except ForeignStepError as exc:
        raise Reject(exc.code, exc.detail) from None
    fields |= {k: v for k, v in (step.fields or {}).items() if v is not None}
    index = position if fields.get("step_index") is None else fields["step_index"]
    if isinstance(record.get("step"), int) and not isinstance(record["step"], bool) and fields.get("step_index") is None:
        index = record["step"]
    shot = _our_screenshot(record, fields, base, lake)
    return _Step(index, step.actions, step.raw_output, step.format_error, shot, fields)


def _our_actions(record: dict, fields: dict) -> tuple[list[Action], str, str | None]:
    """Given actions must be valid; raw_output alone is parsed, and a format error is kept, not rejected."""
    raw = fields["raw_output"]
    if record.get("actions") is not None:
        data = record["actions"]
    elif fields["actions_json"] is not None:
        data = _json(fields["actions_json"], "actions_json")
    elif raw is not None:
        parsed = parse_model_output(raw)
        return parsed.actions, raw, parsed.format_error
    else:
        raise Reject("missing_field:actions", "a step needs `actions`, `actions_json` or `raw_output`")
    actions = _valid_actions(data)
    return actions, raw if raw is not None else _actions_json(actions), fields["format_error"]


def _valid_actions(data: Any) -> list[Action]:
    """Action dicts in our action space; an unknown name and bad arguments are different rejections."""
    for item in _typed_list(data, "actions"):
        if not isinstance(item, dict):
            raise Reject("wrong_type:actions", f"an action is a {type(item).__name__}, not an object")
        name = item.get("action")
        if not isinstance(name, str) or name not in ACTION_NAMES:
            raise Reject("unknown_action", f"{name!r} is not an action of ours")
    try:  # a null field is a field left out (Parquet structs carry every field of every action)
        return parse_actions([{k: v for k, v in item.items() if v is not None} for item in data])
    except ValidationError as exc:
        raise Reject("invalid_action", _first_error(exc)) from None


def _our_screenshot(record: dict, fields: dict, base: Path, lake: Lake) -> bytes | None:
    """The screenshot's bytes to store, or None when it is already a blob of this lake (or absent)."""
    if record.get("screenshot_b64") is not None:
        try:
            data = base64.b64decode(_checked_type(record["screenshot_b64"], str, "screenshot_b64"), validate=True)
        except binascii.Error as exc:
            raise Reject("invalid_screenshot", f"screenshot_b64 is not base64: {exc}") from None
        _check_image(data, "screenshot_b64")
        return data
    if record.get("screenshot_path") is not None:
        return _read_screenshot([base], _checked_type(record["screenshot_path"], str, "screenshot_path"))
    sha = fields["screenshot_sha"]
    if sha is not None and not lake.has_blob(sha):
        raise Reject("missing_screenshot", f"blob {sha} is not in this lake")
    return None


# ---- Qwen-CUA run directories ------------------------------------------------------------------------


def _qwen_run(path: Path, ctx: _Context, key: str) -> Episode:
    """run.json is the trajectory, each events.jsonl line one model turn with its raw output."""
    run = _json((path / "run.json").read_bytes(), "run.json")
    if not isinstance(run, dict):
        raise Reject("wrong_type:run.json", f"expected an object, got {type(run).__name__}")
    previous = _first(run, TRAJECTORY, "started_at", "start_time")
    steps = []
    for position, event in enumerate(_qwen_events(path / "events.jsonl")):
        step = _in_step(position, partial(_qwen_step, event, position, path, previous))
        previous = step.fields["finished_at"] or previous
        steps.append(step)
    ended, detail = _qwen_end(run, steps)
    trajectory = {
        "task_id": _first(run, TRAJECTORY, "task_id"), "model": _first(run, TRAJECTORY, "model"),
        "policy": _first(run, TRAJECTORY, "policy"), "sandbox": _first(run, TRAJECTORY, "sandbox"),
        "started_at": _first(run, TRAJECTORY, "started_at", "start_time"),
        "finished_at": _first(run, TRAJECTORY, "finished_at", "end_time"),
        "final_answer": _first(run, TRAJECTORY, "final_answer", "answer"), "ended": ended, "end_detail": detail,
    }
    instruction = _checked_type(run.get("instruction", run.get("task")), str, "instruction")
    return _episode(ctx, key, trajectory, steps, instruction)


def _qwen_events(path: Path) -> Iterator[dict]:
    """The turns of a run; one broken line rejects the run, since its turns would no longer be whole."""
    if not path.is_file():
        raise Reject("missing_file", f"{path.name} is not in the run directory")
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        event = _json(line, f"events.jsonl line {number}")
        if not isinstance(event, dict):
            raise Reject("wrong_type:event", f"events.jsonl line {number} is not an object")
        yield event


def _qwen_step(event: dict, position: int, run_dir: Path, previous: dt.datetime | None) -> _Step:
    """A turn: its output parsed as-is (a format error stays a step), its error, its screenshot file."""
    index = _checked_type(event.get("step", event.get("step_index", position)), int, "step")
    output = event.get("output", event.get("raw_output", event.get("response")))
    if output is None:
        raise Reject("missing_field:output", "an event needs the model's raw output")
    if not isinstance(output, str | dict | list):
        raise Reject("wrong_type:output", f"expected text or a message, got {type(output).__name__}")
    parsed = parse_model_output(output)
    error = _checked_type(event.get("error"), str, "error")
    name = _checked_type(event.get("screenshot"), str, "screenshot")
    screenshot = _read_screenshot([run_dir / "screenshots", run_dir], name) if name else None
    fields = {
        "url": _checked_type(event.get("url"), str, "url"), "error": error,
        "started_at": _first(event, STEP, "started_at") or previous,
        "finished_at": _first(event, STEP, "finished_at", "timestamp"),
    }
    return _Step(index, parsed.actions, parsed.raw, parsed.format_error, screenshot, fields)


def _qwen_end(run: dict, steps: list[_Step]) -> tuple[str, str | None]:
    """The source's final status, read as ours: error statuses are env_error, a final one terminated."""
    status = _checked_type(run.get("status", run.get("final_status")), str, "status")
    error = _checked_type(run.get("error"), str, "error")
    s = (status or "").lower()
    if s in ENDED:
        ended = s
    elif s in _ERROR_STATUSES:
        ended = "env_error"
    elif s in _FINAL_STATUSES or _terminates(steps):
        ended = "terminated"
    else:
        ended = "max_steps"
    return ended, error or status


# ---- GUI-Odyssey -------------------------------------------------------------------------------------

_ODYSSEY_BUTTONS = {"KEY_HOME": "home", "KEY_BACK": "back", "HOME": "home", "BACK": "back"}


def _odyssey(content: bytes, path: Path, ctx: _Context, key: str) -> Episode:
    """An annotations/<episode_id>.json file: human demonstration steps on 0..1000 coordinates."""
    data = _json(content, path.name)
    if not isinstance(data, dict):
        raise Reject("wrong_type:record", f"expected an episode object, got {type(data).__name__}")
    task = _checked_type(data.get("task_info"), dict, "task_info") or {}
    device = _checked_type(data.get("device_info"), dict, "device_info") or {}
    size = {"screen_width": _checked_type(device.get("w"), int, "device_info.w"),
            "screen_height": _checked_type(device.get("h"), int, "device_info.h")}
    dirs = [path.parent.parent / "screenshots", path.parent / "screenshots", path.parent]
    if data.get("steps") is None:
        raise Reject("missing_field:steps", "an episode needs `steps`")
    steps = _each_step(_typed_list(data["steps"], "steps"), lambda step, i: _odyssey_step(step, i, dirs, size))
    instruction = _checked_type(task.get("instruction") or task.get("task"), str, "task_info.instruction")
    return _episode(ctx, key, {}, steps, instruction)


def _odyssey_step(record: Any, position: int, dirs: list[Path], size: dict) -> _Step:
    """One annotated step: one action, its screenshot, and the annotation itself as the raw output."""
    if not isinstance(record, dict):
        raise Reject("wrong_type:steps", f"a step is a {type(record).__name__}, not an object")
    index = _checked_type(record.get("step", position), int, "step")
    action = _odyssey_action(record.get("action"), record.get("info"))
    name = _checked_type(record.get("screenshot"), str, "screenshot")
    if not name:
        raise Reject("missing_screenshot", "the step names no screenshot")
    raw = json.dumps(record, ensure_ascii=False)  # the annotation itself, `ps` included
    return _Step(index, [action], raw, None, _read_screenshot(dirs, name), size)


def _odyssey_action(name: Any, info: Any) -> Action:
    """CLICK / LONG_PRESS / SCROLL / TEXT / COMPLETE / INCOMPLETE (and the documented spellings) as ours."""
    name = _checked_type(name, str, "action").upper()
    try:
        if isinstance(info, str) and info.upper() in _ODYSSEY_BUTTONS and name in ("CLICK", "LONG_PRESS"):
            return SystemButton(button=_ODYSSEY_BUTTONS[info.upper()])
        if isinstance(info, str) and info.upper().startswith("KEY_") and name in ("CLICK", "LONG_PRESS"):
            raise Reject("unknown_action", f"{name} {info}: no such button in our action space")
        if name in ("HOME", "BACK"):
            return SystemButton(button=_ODYSSEY_BUTTONS[name])
        if name in ("CLICK", "LONG_PRESS"):
            [(x, y)] = _grid(info, 1)
            return Tap(x=x, y=y) if name == "CLICK" else LongPress(x=x, y=y)
        if name == "SCROLL":
            (x, y), (x2, y2) = _grid(info, 2)
            return Swipe(x=x, y=y, x2=x2, y2=y2)
        if name in ("TEXT", "TYPE"):
            return Type(text=_checked_type(info, str, "info"))
        if name in ("COMPLETE", "INCOMPLETE", "IMPOSSIBLE"):
            return Terminate(status="success" if name == "COMPLETE" else "failure")
    except ValidationError as exc:
        raise Reject("invalid_action", f"{name}: {_first_error(exc)}") from None
    raise Reject("unknown_action", f"{name!r} is not a GUI-Odyssey action we map")


def _grid(info: Any, count: int) -> list[tuple[int, int]]:
    """`count` [x, y] points on GUI-Odyssey's 0..1000 scale, onto our 0..999 grid."""
    ok = isinstance(info, list) and len(info) == count and all(
        isinstance(p, list | tuple) and len(p) == 2 and all(_is_number(v) for v in p) for p in info
    )
    if not ok:
        raise Reject("wrong_type:info", f"expected {count} [x, y] point(s), got {info!r:.80}")
    return [(round(x * 999 / 1000), round(y * 999 / 1000)) for x, y in info]


# ---- rows, exactly as a rollout writes them -----------------------------------------------------------


def _episode(ctx: _Context, key: str, trajectory: dict, steps: list[_Step], instruction: str | None) -> Episode:
    """Trajectory and step rows from what a source gave; id, counts, run and times come from the import."""
    indices = Counter(s.index for s in steps)
    if dupes := sorted(i for i, n in indices.items() if n > 1):
        raise Reject("duplicate_step_index", f"step_index {dupes} appear more than once")
    steps = sorted(steps, key=lambda s: s.index)
    row = {name: trajectory.get(name) for name in TRAJECTORY.names} | {
        "trajectory_id": key, "task_id": trajectory.get("task_id") or _task_id(instruction),
        "policy": trajectory.get("policy") or IMPORTED_POLICY, "num_steps": len(steps),
        "ended": trajectory.get("ended") or ("terminated" if _terminates(steps) else "max_steps"),
        "run_id": ctx.run_id, "recorded_at": ctx.now,
        "instruction": instruction if instruction is not None else trajectory.get("instruction"),
    }
    if row["ended"] not in ENDED:
        raise Reject("invalid_value:ended", f"{row['ended']!r} is not one of {', '.join(ENDED)}")
    if row["final_answer"] is None:
        row["final_answer"] = next((a.answer for s in steps for a in s.actions if isinstance(a, Terminate)), None)
    if row["duration_s"] is None and row["started_at"] and row["finished_at"]:
        row["duration_s"] = (row["finished_at"] - row["started_at"]).total_seconds()
    blobs = [s.screenshot for s in steps if s.screenshot is not None]
    return Episode(row, [_step_row(ctx, key, s) for s in steps], blobs)


def _step_row(ctx: _Context, trajectory_id: str, step: _Step) -> dict[str, Any]:
    """A steps row with the columns filled the way run_episode fills them."""
    row = {name: step.fields.get(name) for name in STEP.names}
    size = _png_size(step.screenshot) if step.screenshot is not None else None
    row |= {
        "trajectory_id": trajectory_id, "step_index": step.index, "raw_output": step.raw_output,
        "actions_json": _actions_json(step.actions), "format_error": step.format_error, "run_id": ctx.run_id,
        "points_json": row["points_json"] or json.dumps([_point(a) for a in step.actions]),
    }
    if step.screenshot is not None:
        row["screenshot_sha"] = hashlib.sha256(step.screenshot).hexdigest()  # what Lake.put_blob returns
    if size:
        row["screen_width"], row["screen_height"] = size
    if row["ok"] is None:  # as in a rollout: no action failed (a format error is its own column)
        row["ok"] = row["error"] is None
    return row


def _each_step(records: list, convert: Callable[[Any, int], _Step]) -> list[_Step]:
    """Convert every step of a trajectory, stopping at the first bad one."""
    return [_in_step(i, partial(convert, record, i)) for i, record in enumerate(records)]


def _in_step(position: int, convert: Callable[[], _Step]) -> _Step:
    """Convert one step; its rejection names the step, and rejects the whole trajectory."""
    try:
        return convert()
    except Reject as exc:
        raise Reject(exc.code, f"step {position}: {exc.detail}") from None


def _terminates(steps: list[_Step]) -> bool:
    """A rollout ends as `terminated` exactly when its last turn holds a terminate action."""
    return bool(steps) and any(isinstance(a, Terminate) for a in steps[-1].actions)


def _task_id(instruction: str | None) -> str:
    """A stable task id for a source without one, so episodes of the same instruction group together."""
    if not instruction or not instruction.strip():
        raise Reject("missing_field:task_id", "no task_id, and no instruction to derive one from")
    return f"imported-{hashlib.sha256(instruction.strip().encode()).hexdigest()[:16]}"


def _actions_json(actions: list[Action]) -> str:
    """The actions as rollout.py dumps them, so imported and own steps read alike."""
    return json.dumps([a.model_dump(exclude_none=True) for a in actions])


def _point(action: Action) -> list[int] | None:
    """Where an action lands on the 0..999 grid, as the driver reports it: its own x, y when it has them."""
    x, y = getattr(action, "x", None), getattr(action, "y", None)
    return [x, y] if x is not None and y is not None else None


# ---- values ------------------------------------------------------------------------------------------


def _typed(record: dict, schema: pa.Schema, skip: set[str]) -> dict[str, Any]:
    """The record's values for the schema's columns, each checked (and converted) to the column's type."""
    return {f.name: _coerce(f, record.get(f.name), f.name) for f in schema if f.name not in skip}


def _first(record: dict, schema: pa.Schema, column: str, *aliases: str) -> Any:
    """A column's value under its own name or a source's alias, checked against the column's type."""
    name = next((n for n in (column, *aliases) if record.get(n) is not None), column)
    return _coerce(schema.field(column), record.get(name), name)


def _coerce(column: pa.Field, value: Any, name: str) -> Any:
    """A value of the column's type, or a `wrong_type:<name>` rejection naming the source's field."""
    if value is None:
        return None
    kind = column.type
    if pa.types.is_timestamp(kind):
        return _timestamp(value, name)
    if pa.types.is_string(kind):
        ok = isinstance(value, str)
    elif pa.types.is_boolean(kind):
        ok = isinstance(value, bool)
    elif pa.types.is_integer(kind):
        ok = isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31
    else:
        ok = _is_number(value)
        value = float(value) if ok else value
    if not ok:
        raise Reject(f"wrong_type:{name}", f"expected {kind}, got {type(value).__name__} {value!r:.60}")
    return value


def _timestamp(value: Any, name: str) -> dt.datetime:
    """ISO-8601 text, epoch seconds or a datetime; a time without a zone is UTC."""
    try:
        if isinstance(value, dt.datetime):
            stamp = value
        elif isinstance(value, str):
            stamp = dt.datetime.fromisoformat(value)
        elif _is_number(value):
            stamp = dt.datetime.fromtimestamp(value, dt.UTC)
        else:
            raise TypeError(type(value).__name__)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise Reject(f"wrong_type:{name}", f"not a time: {value!r:.60} ({exc})") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def _checked_type(value: Any, kind: type, name: str) -> Any:
    """The value if it is absent or of `kind`; a bool is never taken for an int."""
    if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
        raise Reject(f"wrong_type:{name}", f"expected {kind.__name__}, got {type(value).__name__} {value!r:.60}")
    return value


def _typed_list(value: Any, name: str) -> list:
    """The value if it is a list, so iterating a string or an object never passes for steps."""
    if not isinstance(value, list):
        raise Reject(f"wrong_type:{name}", f"expected a list, got {type(value).__name__}")
    return value


def _is_number(value: Any) -> bool:
    """An int or a float, not a bool (which Python counts as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json(text: str | bytes, what: str) -> Any:
    """Parsed JSON, or an `invalid_json` rejection that says which part of the record was broken."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Reject("invalid_json", f"{what}: {exc}") from None


def _failing(code: str, detail: str) -> Callable[[], Episode]:
    """A build for a record already known to be bad (it still counts, and is quarantined)."""

    def build() -> Episode:
        raise Reject(code, detail)

    return build


def _first_error(exc: ValidationError) -> str:
    """The first validation problem, short enough for a quarantine reason."""
    error = exc.errors()[0]
    return f"{'.'.join(map(str, error['loc'])) or 'action'}: {error['msg']}"


# ---- files, blobs and ids -----------------------------------------------------------------------------


def _read_screenshot(dirs: list[Path], name: str) -> bytes:
    """A screenshot file's bytes from the first directory holding it, or `missing_screenshot`. The name must
    stay inside that directory: no absolute path, no `..`, no symlink that leads out (`unsafe_path`); the
    file must be at most MAX_IMAGE_BYTES and decode as an image (`screenshot_too_large`, `invalid_screenshot`)."""
    relative = Path(name)
    if not name or "\0" in name or relative.is_absolute() or relative.drive or ".." in relative.parts:
        raise Reject("unsafe_path", f"{name!r:.120} must be a relative path inside the source's folder")
    for directory in dirs:
        candidate = directory / relative
        if not (candidate.exists() or candidate.is_symlink()):
            continue
        resolved, root = candidate.resolve(), directory.resolve()
        if not resolved.is_relative_to(root):
            raise Reject("unsafe_path", f"{name!r:.120} leads outside {directory} (a symlink to {resolved})")
        if not resolved.is_file():
            continue
        size = resolved.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise Reject("screenshot_too_large", f"{name}: {size} bytes is over the {MAX_IMAGE_BYTES}-byte cap")
        data = resolved.read_bytes()
        _check_image(data, name)
        return data
    raise Reject("missing_screenshot", f"{name} is not in {', '.join(map(str, dirs))}")


def _check_image(data: bytes, name: str) -> None:
    """The bytes decode as an image of sane size (a decompression bomb is refused before it is decoded)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise Reject("screenshot_too_large", f"{name}: {image.width}x{image.height} pixels is over the cap")
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise Reject("invalid_screenshot", f"{name} is not a decodable image: {exc}") from None


def _png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's IHDR chunk, so imported steps carry the screen size rollouts record."""
    if data[:8] != _PNG or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _canonical(row: dict) -> bytes:
    """A row's bytes independent of key order, for a content hash."""
    return json.dumps(row, sort_keys=True, default=str).encode()


def _digest(*parts: str | bytes) -> str:
    """sha256 over separated parts, so ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _trajectory_id(content: bytes, index: int) -> str:
    """Stable for the same record at the same place: the hash of its source content and index."""
    return f"imp-{_digest(content, str(index))[:20]}"
