"""The mining run's summary as markdown, and its picture: an SVG bar chart of failures per kind and reason
(no plotting dependency; the style of flows/cycle/chart.py)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flows.failure_mining.mining import MiningSummary

BAR_H, GAP, LABEL_W, BAR_W, PAD = 18, 6, 230, 360, 12
KIND_COLOURS = {"loop": "#4C78A8", "bad_args": "#F58518", "sensitive": "#E45756", "premature": "#54A24B"}


def failures_chart_svg(counts: dict[str, int], title: str) -> str:
    """counts: {"kind/reason": n}; one bar per reason, coloured by kind, longest bar = most findings."""
    rows = sorted(counts.items(), key=lambda kv: (kv[0].split("/")[0], -kv[1], kv[0]))
    top = max(counts.values(), default=0) or 1
    height = PAD * 3 + 20 + max(1, len(rows)) * (BAR_H + GAP)
    width = LABEL_W + BAR_W + 110
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{PAD}" y="{PAD + 12}" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    if not rows:
        parts.append(f'<text x="{PAD}" y="{PAD * 2 + 32}">no failures found</text>')
    for i, (label, n) in enumerate(rows):
        y = PAD * 2 + 20 + i * (BAR_H + GAP)
        colour = KIND_COLOURS.get(label.split("/")[0], "#72B7B2")
        parts += [
            f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end">{escape(label.replace("/", " · "))}</text>',
            f'<rect x="{LABEL_W}" y="{y}" width="{BAR_W}" height="{BAR_H}" fill="#eee"/>',
            f'<rect x="{LABEL_W}" y="{y}" width="{n / top * BAR_W:.1f}" height="{BAR_H}" fill="{colour}"/>',
            f'<text x="{LABEL_W + BAR_W + 8}" y="{y + 13}">{n:,}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts)


def _table(title: str, counts: dict[str, int], key: str) -> list[str]:
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [
        f"## {title}",
        "",
        f"| {key} | findings |",
        "|---|---|",
        *[f"| {k} | {v:,} |" for k, v in rows],
        "",
    ]


def _many(n: int, one: str, more: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else more or one + 's'}"


def summary_markdown(summary: MiningSummary) -> str:
    """A MiningSummary as markdown: totals, then counts per kind, reason, sandbox, policy and undecidable."""
    s = summary
    lines = [
        f"# mine-failures ({s.run_id}, detector {s.detector_version})",
        "",
        f"{_many(s.trajectories, 'trajectory', 'trajectories')} ({_many(s.steps, 'step')}) mined in {s.seconds:.1f} s, "
        f"{_many(s.batches, 'batch', 'batches')}: {_many(s.failures, 'failure')} in "
        f"{_many(s.failed_trajectories, 'trajectory', 'trajectories')}, {_many(s.seeds, 'seed')}.",
        "",
    ]
    if s.waiting:
        lines += [f"{s.waiting:,} trajectories have no steps in the lake yet; they stay pending.", ""]
    if s.chart:
        lines += [f"![failures per kind and reason]({s.chart.rsplit('/', 1)[-1]})  ({s.chart})", ""]
    lines += _table("failures per kind", s.by_kind, "kind")
    lines += _table("failures per kind and reason", s.by_reason, "kind/reason")
    lines += _table("failures per sandbox", s.by_sandbox, "sandbox")
    lines += _table("failures per policy", s.by_policy, "policy")
    undecided = [f"| {k} | {v:,} |" for k, v in sorted(s.undecidable.items()) if v]
    lines += ["## undecidable checks (counted, not guessed)", ""]
    lines += (
        ["| check | cases |", "|---|---|", *undecided]
        if undecided
        else ["none: every check could be decided"]
    )
    return "\n".join([*lines, ""])
