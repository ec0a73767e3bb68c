"""The plan of a run, kept beside the lake until the run ends, so that the same command run again after a
SIGKILL (which skips every `finally`) takes the plan over and does only what is left.

    claim = resume.adopt(lake, "rollout", key) or resume.keep(lake, "rollout", key, plan)
    ...                      # claim.plan: the dead run's plan, or this one's; claim.resumed says which
    resume.finish(claim)     # the run ended: nothing to resume

A plan names its owner (host, pid and the pid's start time). A run adopts only a plan whose owner ran on this
host and is gone (a plan of a live run, or of another host, is not ours to take), and claims it by renaming
it first, so two reruns at once never share one. Plans live in `<lake root>/resume/<flow>/`, a local folder
also for a lake on object storage (as the catalog is).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.orphans import process_start_time
from lake.store import Lake


@dataclass
class Claim:
    path: Path
    plan: dict[str, Any]
    resumed: bool  # the plan is a dead run's, taken over


def _me() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": process_start_time(os.getpid())}


def _gone(owner: dict[str, Any]) -> bool:
    """Whether the owner surely ended: on this host, and its pid is no longer the process that wrote the plan."""
    return owner.get("host") == socket.gethostname() and process_start_time(int(owner.get("pid", 0))) != owner.get("started")


def _folder(lake: Lake, flow: str) -> Path:
    return lake.root / "resume" / flow


def _write(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, path)


def keep(lake: Lake, flow: str, key: str, plan: dict[str, Any]) -> Claim:
    """Keep this run's plan until `finish`; `key` names the command (its parameters that shape the plan)."""
    path = _folder(lake, flow) / f"{uuid.uuid4().hex}.json"
    _write(path, {"key": key, "owner": _me(), "plan": plan})
    return Claim(path, plan, resumed=False)


def adopt(lake: Lake, flow: str, key: str) -> Claim | None:
    """The plan of a dead run of `flow` with this key, now owned by this process; None when there is none."""
    folder = _folder(lake, flow)
    for path in sorted(folder.glob("*.json")) if folder.exists() else []:
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if state.get("key") != key or not _gone(state.get("owner", {})):
            continue
        taking = path.with_suffix(f".taking-{uuid.uuid4().hex}")
        try:
            os.rename(path, taking)  # only one adopter wins the rename
        except FileNotFoundError:
            continue
        claimed = path.with_name(f"{uuid.uuid4().hex}.json")
        _write(claimed, state | {"owner": _me()})
        taking.unlink()
        return Claim(claimed, state["plan"], resumed=True)
    return None


def finish(claim: Claim) -> None:
    claim.path.unlink(missing_ok=True)
