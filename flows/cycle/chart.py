"""A small SVG bar chart (no plotting dependency): success rate per sandbox and family."""

from __future__ import annotations

from html import escape

BAR_H, GAP, LABEL_W, BAR_W, PAD = 18, 6, 190, 360, 12


def success_chart_svg(rows: list[dict], title: str) -> str:
    """rows: dicts with sandbox, family, success_rate (0..1) and episodes."""
    height = PAD * 3 + 20 + len(rows) * (BAR_H + GAP)
    width = LABEL_W + BAR_W + 110
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{PAD}" y="{PAD + 12}" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    palette = ["#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2"]
    sandboxes = sorted({r["sandbox"] for r in rows})
    for i, r in enumerate(rows):
        y = PAD * 2 + 20 + i * (BAR_H + GAP)
        rate = max(0.0, min(1.0, float(r["success_rate"] or 0)))
        colour = palette[sandboxes.index(r["sandbox"]) % len(palette)]
        label = f"{r['sandbox']} · {r['family']}"
        parts += [
            f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{LABEL_W}" y="{y}" width="{BAR_W}" height="{BAR_H}" fill="#eee"/>',
            f'<rect x="{LABEL_W}" y="{y}" width="{rate * BAR_W:.1f}" height="{BAR_H}" fill="{colour}"/>',
            f'<text x="{LABEL_W + BAR_W + 8}" y="{y + 13}">{rate:.0%} of {r["episodes"]}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts)
