"""The simulated annotator's curves as an SVG chart, drawn as tianchi-eval draws its line charts (its
palette, a <title> on the chart and on each point holding the figures, axis values as text, no
script): F1 and the negative label's F1 (two panels) against the labels added, one line an ordering, +- one SE as
a bar at each point."""

import math
from xml.sax.saxutils import escape

PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00")
W, H, LEFT, TOP, PW, PH = 760, 330, 60, 40, 280, 220


def svg(rows, orders, steps, seed_size=500, negative="负面"):
    """rows: summary rows {order, labels, f1, f1_se, neg_f1, neg_f1_se, folds}; seed_size 0: the labels
    are all there is (a start from nothing); negative: the negative label's name."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="sans-serif" font-size="12">',
           f"<title>Simulated annotator: F1 and {escape(negative)} F1 on the held-out folds by labels "
           f"{'added' if seed_size else 'given, from nothing'}</title>"]
    xmax = max(steps) or 1
    for panel, (key, name) in enumerate((("f1", "F1"), ("neg_f1", f"{negative} F1"))):
        x0 = LEFT + panel * (PW + 90)
        vals = [r[key] + s * (r[key + "_se"] if not math.isnan(r[key + "_se"]) else 0)
                for r in rows for s in (-1, 1)]
        lo, hi = (min(vals), max(vals)) if vals else (0, 1)
        pad = max((hi - lo) * 0.1, 0.005)
        lo, hi = max(0.0, lo - pad), hi + pad
        px = lambda n: x0 + PW * n / xmax  # noqa: E731
        py = lambda v: TOP + PH * (1 - (v - lo) / (hi - lo))  # noqa: E731
        out.append(f'<text x="{x0 + PW / 2}" y="{TOP - 14}" text-anchor="middle" font-weight="bold">{escape(name)}</text>')
        for t in range(6):
            v = lo + (hi - lo) * t / 5
            out.append(f'<line x1="{x0}" y1="{py(v):.1f}" x2="{x0 + PW}" y2="{py(v):.1f}" stroke="#000" '
                       f'stroke-opacity="0.12"/><text x="{x0 - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
        for n in steps:
            out.append(f'<line x1="{px(n):.1f}" y1="{TOP}" x2="{px(n):.1f}" y2="{TOP + PH}" stroke="#000" '
                       f'stroke-opacity="0.12"/><text x="{px(n):.1f}" y="{TOP + PH + 16}" text-anchor="middle">{n}</text>')
        out.append(f'<text x="{x0 + PW / 2}" y="{TOP + PH + 34}" text-anchor="middle">{f"labels added to {seed_size}" if seed_size else "labels, from nothing"}</text>')
        for j, order in enumerate(orders):
            pts = sorted((r["labels"], r[key], r[key + "_se"], r["folds"]) for r in rows if r["order"] == order)
            if not pts:
                continue
            colour = PALETTE[j % len(PALETTE)]
            d = " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(v):.1f}" for i, (n, v, _, _) in enumerate(pts))
            out.append(f'<g><title>{escape(order)}</title><path fill="none" stroke="{colour}" stroke-width="2" d="{d}"/>')
            for n, v, se, folds in pts:
                if not math.isnan(se):
                    out.append(f'<line x1="{px(n):.1f}" y1="{py(v - se):.1f}" x2="{px(n):.1f}" y2="{py(v + se):.1f}" '
                               f'stroke="{colour}"/>')
                out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3.5" fill="{colour}"><title>{escape(order)}, '
                           f'{n} labels: {name} {v:.4f} +- {se:.4f} ({len(folds)} folds)</title></circle>')
            out.append("</g>")
    for j, order in enumerate(orders):
        x = LEFT + j * 130
        out.append(f'<line x1="{x}" y1="{H - 14}" x2="{x + 22}" y2="{H - 14}" stroke="{PALETTE[j % len(PALETTE)]}" '
                   f'stroke-width="2"/><text x="{x + 28}" y="{H - 10}">{escape(order)}</text>')
    out.append("</svg>\n")
    return "\n".join(out)
