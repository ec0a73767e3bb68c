"""The coverage picture (SVG, no plotting dependency): one bar per area, its length the number of
verified tasks, its colour a heat scale from none (red) to well covered (green)."""

from __future__ import annotations

from html import escape

from flows.exploration.coverage import AreaCoverage

BAR_H, GAP, LABEL_W, BAR_W, PAD = 14, 3, 300, 300, 12
HEAT = ["#d73027", "#fc8d59", "#fee08b", "#d9ef8b", "#91cf60", "#1a9850"]  # 0, 1, 2-3, 4-7, 8-15, 16+


def _heat(n: int) -> str:
    for i, limit in enumerate((0, 1, 3, 7, 15)):
        if n <= limit:
            return HEAT[i]
    return HEAT[-1]


def coverage_chart_svg(sandbox: str, coverage: list[AreaCoverage], title: str = "") -> str:
    rows = sorted(coverage, key=lambda c: (c.kind, c.area))
    top = max([c.verified_tasks for c in rows] + [1])
    height = PAD * 3 + 36 + len(rows) * (BAR_H + GAP)
    width = LABEL_W + BAR_W + 170
    covered = sum(1 for c in rows if c.verified_tasks)
    heading = title or f"{sandbox}: verified tasks per area ({covered} of {len(rows)} areas covered)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{PAD}" y="{PAD + 12}" font-size="14" font-weight="bold">{escape(heading)}</text>',
        f'<text x="{PAD}" y="{PAD + 30}" fill="#555">bar: verified tasks · label: trajectories / failures</text>',
    ]
    for i, c in enumerate(rows):
        y = PAD * 2 + 36 + i * (BAR_H + GAP)
        length = max(2.0, BAR_W * c.verified_tasks / top)
        label = f"{c.kind[0].upper()} {c.area}" + (" *" if c.exists_from == "exploration" else "")
        parts += [
            f'<text x="{LABEL_W - 6}" y="{y + 11}" text-anchor="end">{escape(label[:52])}</text>',
            f'<rect x="{LABEL_W}" y="{y}" width="{length:.1f}" height="{BAR_H}" fill="{_heat(c.verified_tasks)}"/>',
            f'<text x="{LABEL_W + length + 6:.1f}" y="{y + 11}">{c.verified_tasks} · {c.trajectories}/{c.failures}</text>',
        ]
    parts.append(f'<text x="{PAD}" y="{height - 4}" fill="#555">S screen · A action · E entity · * found by exploring</text>')
    parts.append("</svg>")
    return "\n".join(parts)
