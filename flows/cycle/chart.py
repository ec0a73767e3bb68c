"""A small SVG bar chart (no plotting dependency): success rate per sandbox and family, bars per iteration."""

from __future__ import annotations

from html import escape

GAP, LABEL_W, BAR_W, PAD = 6, 190, 360, 12
ITER_COLOURS = ["#9ecae1", "#4292c6", "#08519c", "#fdae6b", "#e6550d", "#a63603"]


def iteration_chart_svg(rows: list[dict], title: str, subtitle: str = "") -> str:
    """Grouped bars: for each (sandbox, family), one bar per iteration (success rate 0..1), with a legend.
    rows: dicts with iteration, sandbox, family, success_rate and episodes."""
    iterations = sorted({r["iteration"] for r in rows})
    groups = sorted({(r["sandbox"], r["family"]) for r in rows})
    by = {(r["sandbox"], r["family"], r["iteration"]): r for r in rows}
    bar_h = 12
    group_h = len(iterations) * bar_h + GAP + 4
    top = PAD * 2 + 20 + (16 if subtitle else 0) + 22
    height = top + len(groups) * group_h + PAD
    width = LABEL_W + BAR_W + 110
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{PAD}" y="{PAD + 12}" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    if subtitle:
        parts.append(f'<text x="{PAD}" y="{PAD + 30}" font-size="11" fill="#444">{escape(subtitle)}</text>')
    legend_y = top - 18
    for j, it in enumerate(iterations):
        x = LABEL_W + j * 90
        parts += [f'<rect x="{x}" y="{legend_y}" width="12" height="12" fill="{ITER_COLOURS[j % len(ITER_COLOURS)]}"/>',
                  f'<text x="{x + 16}" y="{legend_y + 10}">iteration {it}</text>']
    for g, (sandbox, family) in enumerate(groups):
        y0 = top + g * group_h
        parts.append(f'<text x="{LABEL_W - 8}" y="{y0 + len(iterations) * bar_h / 2 + 4}" text-anchor="end">'
                     f'{escape(f"{sandbox} · {family}")}</text>')
        for j, it in enumerate(iterations):
            y = y0 + j * bar_h
            r = by.get((sandbox, family, it))
            parts.append(f'<rect x="{LABEL_W}" y="{y}" width="{BAR_W}" height="{bar_h - 2}" fill="#f2f2f2"/>')
            if r is None:
                parts.append(f'<text x="{LABEL_W + BAR_W + 8}" y="{y + bar_h - 3}" fill="#888">not rolled out</text>')
                continue
            rate = max(0.0, min(1.0, float(r["success_rate"] or 0)))
            parts += [
                f'<rect x="{LABEL_W}" y="{y}" width="{rate * BAR_W:.1f}" height="{bar_h - 2}" fill="{ITER_COLOURS[j % len(ITER_COLOURS)]}"/>',
                f'<text x="{LABEL_W + BAR_W + 8}" y="{y + bar_h - 3}">{rate:.0%} of {r["episodes"]}</text>',
            ]
    parts.append("</svg>")
    return "\n".join(parts)
