"""Which part of the sample a reviewer works through: by sandbox, task family and AutoJudge verdict.

A filter lives in the URL (`/item/3?sandbox=shop&verdict=failed`), so a link names what it shows and j/k and
"next after a decision" stay inside it. Values are checked against what the sample holds; anything else is
ignored (never echoed back unescaped, never used to query the lake)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from flywheel.review.sampling import SampleItem

FIELDS = ("sandbox", "family", "verdict")


@dataclass(frozen=True)
class QueueFilter:
    sandbox: str = ""
    family: str = ""
    verdict: str = ""  # pass | failed | env_error: only judged trajectories have one

    @classmethod
    def from_args(cls, args: Mapping[str, str], options: Mapping[str, Sequence[str]]) -> QueueFilter:
        return cls(**{f: v for f in FIELDS if (v := args.get(f, "")) in options[f]})

    def matches(self, item: SampleItem, verdict: str | None) -> bool:
        return ((not self.sandbox or item.sandbox == self.sandbox) and (not self.family or item.family == self.family)
                and (not self.verdict or verdict == self.verdict))

    def query(self) -> str:
        """'?sandbox=shop&…' for links, '' when nothing is filtered."""
        given = {f: getattr(self, f) for f in FIELDS if getattr(self, f)}
        return f"?{urlencode(given)}" if given else ""

    def __bool__(self) -> bool:
        return any(getattr(self, f) for f in FIELDS)

    def describe(self) -> str:
        return ", ".join(f"{f} {getattr(self, f)}" for f in FIELDS if getattr(self, f))


def options(items: Sequence[SampleItem], verdicts: Mapping[str, str]) -> dict[str, list[str]]:
    """The values each filter can take in this sample."""
    return {
        "sandbox": sorted({i.sandbox for i in items}),
        "family": sorted({i.family for i in items if i.family}),
        "verdict": sorted({verdicts[i.item_id] for i in items if i.kind == "trajectory" and i.item_id in verdicts}),
    }


def matching(items: Sequence[SampleItem], verdicts: Mapping[str, str], chosen: QueueFilter) -> list[int]:
    """Indices (into the whole sample) of the items the filter keeps, in sample order."""
    return [i for i, item in enumerate(items)
            if chosen.matches(item, verdicts.get(item.item_id) if item.kind == "trajectory" else None)]
