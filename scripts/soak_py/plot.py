"""SVG plot of the soak's samples (scripts/soak): stacked panels sharing the
time axis (minutes): RSS, open fds, connections, requests per second and
latency (p50/p99/p999, log scale). Standard library only; the output is a
plain SVG 1.1 file any browser shows.
"""
import math
from xml.sax.saxutils import escape

WIDTH = 900
PANEL_H = 150
GAP = 45
LEFT, RIGHT, TOP = 80, 130, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def nice_ticks(lo, hi, n=5):
    """About n round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    ticks, v = [start], start
    while v < hi - step * 1e-9:  # the last tick is at or above hi
        v += step
        ticks.append(round(v, 10))
    return ticks


def fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return "%.0f" % v
    return ("%.3f" % v).rstrip("0").rstrip(".")


def panel(out, y0, title, unit, xs, series, x_max, warmup_min, log=False):
    """Draws one panel at vertical offset y0; series = [(label, values)]."""
    pw = WIDTH - LEFT - RIGHT
    vals = [v for _, ys in series for v in ys if v is not None and (v > 0 or not log)]
    if not vals:
        vals = [1.0]
    if log:
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        if hi <= lo:
            hi = lo * 10
        ticks = []
        t = lo
        while t <= hi * 1.0001:
            ticks.append(t)
            t *= 10

        def ty(v):
            v = max(v, lo)
            return y0 + PANEL_H - (math.log10(v) - math.log10(lo)) / (
                math.log10(hi) - math.log10(lo)) * PANEL_H
    else:
        vmin, vmax = min(vals), max(vals)
        lo = 0.0 if vmin >= 0 else vmin  # from 0: a 5 % growth looks like 5 %
        ticks = nice_ticks(lo, vmax * 1.05 if vmax > 0 else 1)
        lo, hi = ticks[0], ticks[-1]

        def ty(v):
            return y0 + PANEL_H - (v - lo) / (hi - lo) * PANEL_H

    def tx(m):
        return LEFT + m / x_max * pw

    out.append('<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>' %
               (LEFT, y0 - 8, escape(title)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>' %
               (LEFT, y0, pw, PANEL_H))
    for t in ticks:
        y = ty(t)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' %
                   (LEFT, y, LEFT + pw, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>' %
                   (LEFT - 6, y + 4, fmt(t)))
    out.append('<text x="%d" y="%d" font-size="12" text-anchor="middle" '
               'transform="rotate(-90 %d %d)">%s</text>' %
               (18, y0 + PANEL_H // 2, 18, y0 + PANEL_H // 2, escape(unit)))
    for m in nice_ticks(0, x_max):
        if m > x_max + 1e-9:
            continue
        x = tx(m)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' %
                   (x, y0, x, y0 + PANEL_H))
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>' %
                   (x, y0 + PANEL_H + 14, fmt(m)))
    if warmup_min:
        x = tx(warmup_min)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" '
                   'stroke-dasharray="4 3"/>' % (x, y0, x, y0 + PANEL_H))
        out.append('<text x="%.1f" y="%d" font-size="10" fill="#666">warm-up end</text>' %
                   (x + 3, y0 + 11))
    for i, (label, ys) in enumerate(series):
        pts = ["%.1f,%.1f" % (tx(x), ty(y)) for x, y in zip(xs, ys) if y is not None]
        color = COLORS[i % len(COLORS)]
        if pts:
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' %
                       (color, " ".join(pts)))
        ly = y0 + 14 + 16 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>' %
                   (LEFT + pw + 10, ly - 4, LEFT + pw + 30, ly - 4, color))
        out.append('<text x="%d" y="%d" font-size="11">%s</text>' %
                   (LEFT + pw + 34, ly, escape(label)))


def svg(samples, title, warmup_s):
    """The SVG text for `samples` (dicts as written to the CSV)."""
    xs = [s["t_s"] / 60.0 for s in samples]
    x_max = max(xs) if xs else 1.0
    panels = [
        ("Resident memory (VmRSS = RssAnon + RssFile)", "MiB",
         [("VmRSS", [s["rss_kb"] / 1024.0 for s in samples])] +
         [(label, [s[k] / 1024.0 for s in samples]) for label, k in
          (("RssAnon", "rss_anon_kb"), ("RssFile", "rss_file_kb"))
          if samples and k in samples[0]], False),
        ("Open file descriptors", "fds", [("fds", [s["fds"] for s in samples])], False),
        ("Open connections (seqd_open_connections)", "connections",
         [("connections", [s["connections"] for s in samples])], False),
        ("Requests answered per second (errors in red)", "req/s",
         [("requests/s", [s["requests"] / s["window_s"] for s in samples]),
          ("errors/s", [s["errors"] / s["window_s"] for s in samples])], False),
        ("Latency per 10 s window (log scale)", "ms",
         [("p50", [s["p50_ms"] for s in samples]), ("p99", [s["p99_ms"] for s in samples]),
          ("p999", [s["p999_ms"] for s in samples])], True),
    ]
    height = TOP + len(panels) * (PANEL_H + GAP) + 20
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif">' % (WIDTH, height, WIDTH, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>' %
           (LEFT, escape(title))]
    for i, (t, unit, series, log) in enumerate(panels):
        panel(out, TOP + 10 + i * (PANEL_H + GAP), t, unit, xs, series, x_max,
              warmup_s / 60.0, log)
    out.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">minutes since the '
               'load started</text>' % (LEFT + (WIDTH - LEFT - RIGHT) // 2, height - 6))
    out.append("</svg>")
    return "\n".join(out) + "\n"
