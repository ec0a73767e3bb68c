"""What an export is asked for: one frozen config, hashed so the same config names the same dataset."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
_LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")


class ExportConfig(BaseModel):
    """Every knob that changes the bytes of an export. `name` only says where it goes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    format: Literal["messages", "action-rl"] = "messages"
    per: Literal["step", "trajectory"] = "step"  # messages: one row per step or per trajectory
    images: Literal["embed", "ref"] = "embed"  # image bytes in the Parquet, or the blob's key (path relative to the lake root)
    protocol: Literal["qwen-xml", "openai"] = "qwen-xml"  # how assistant turns carry actions
    since: str | None = None  # only trajectories recorded at or after this time (ISO 8601)
    negatives: bool = False  # also export failed trajectories (their verdict column says so)
    # routing by quality (curation.py): sft = passes of verified tasks, rl = active-pool tasks (action-rl),
    # negatives = failed trajectories with mined failures; None = the plain selection
    route: Literal["sft", "rl", "negatives"] | None = None
    max_per_sandbox: int | None = Field(default=None, ge=1)
    max_per_family: int | None = Field(default=None, ge=1)
    max_per_difficulty: int | None = Field(default=None, ge=1)
    near_dedup: bool = True
    history: int = Field(default=12, ge=0)  # previous actions shown in a per-step user turn
    shard_bytes: int = Field(default=256 * 1024 * 1024, ge=64 * 1024)
    seed: int = 0  # order in which balance caps keep trajectories
    # the dataset card's licence: a Hugging Face licence id (SPDX, lower case: cc-by-4.0, apache-2.0, mit, …);
    # "other" (the default) says no licence was chosen
    license: str = "other"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"export name {v!r}: use letters, digits, '_', '.', '-' (at most 80), e.g. shop-sft")
        return v

    @field_validator("license")
    @classmethod
    def _license(cls, v: str) -> str:
        if not _LICENSE.match(v):
            raise ValueError(f"--license {v!r}: use a licence id such as cc-by-4.0, apache-2.0, mit or other")
        return v

    @field_validator("since")
    @classmethod
    def _since(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            when = dt.datetime.fromisoformat(v)
        except ValueError:
            raise ValueError(f"--since {v!r} is not an ISO 8601 time; try 2026-01-31 or 2026-01-31T12:00:00+00:00") from None
        return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).isoformat()

    @model_validator(mode="before")
    @classmethod
    def _routes_with_failures(cls, data: Any) -> Any:
        """rl and negatives sets hold failed trajectories: they are exports with negatives."""
        if isinstance(data, dict) and data.get("route") in ("rl", "negatives"):
            data = {**data, "negatives": True}
        return data

    @model_validator(mode="after")
    def _route_format(self) -> ExportConfig:
        if self.route == "rl" and self.format != "action-rl":
            raise ValueError("--route rl writes RL sets: use --format action-rl (or leave --format out)")
        return self

    def content(self) -> dict:
        """What decides the bytes of the dataset (everything but the name; no route keeps old hashes)."""
        return self.model_dump(exclude={"name"} | ({"route"} if self.route is None else set()))

    @property
    def config_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.content(), sort_keys=True).encode()).hexdigest()
