"""ctest prometheus_rules: promtool checks the Prometheus config and the alert
rules and runs their unit tests; the Grafana dashboard must be valid JSON; and
every metric (and label) name in the alert rules and the dashboard must be one
of docs/metrics.md; every alert rule has a runbook_url annotation
"docs/operations.md#<anchor>" whose anchor is the heading of docs/operations.md
that names the alert. Standard library only. Fails (never skips) without
promtool.
"""
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM = os.path.join(REPO, "config", "prometheus")
DASHBOARD = os.path.join(REPO, "config", "grafana", "seqd-dashboard.json")
METRICS_MD = os.path.join(REPO, "docs", "metrics.md")
OPERATIONS_MD = os.path.join(REPO, "docs", "operations.md")
RUNBOOK_PREFIX = "docs/operations.md#"

# Series Prometheus itself makes, allowed besides docs/metrics.md.
BUILTIN_SERIES = {"up"}
# Labels Prometheus adds (job, instance), the histogram bucket label and the
# alert rules' own; the rest come from docs/metrics.md.
BUILTIN_LABELS = {"job", "instance", "le", "__name__"}

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                   "and", "or", "unless", "offset", "atan2", "inf", "nan"}


def documented():
    """(series names, label names) of docs/metrics.md's Series and Process
    tables. A histogram `x` documents x_bucket, x_sum and x_count."""
    series, labels = set(), set()
    with open(METRICS_MD) as f:
        for line in f:
            # The standard process_* series (their table has no labels column).
            m = re.match(r"\|\s*`(process_\w+)`\s*\|", line)
            if m:
                series.add(m.group(1))
                continue
            m = re.match(r"\|\s*`(seqd_\w+)`\s*\|([^|]*)\|([^|]*)\|", line)
            if not m:
                continue
            name, kind, labs = m.group(1), m.group(2), m.group(3)
            if "histogram" in kind:
                series.update(name + s for s in ("_bucket", "_sum", "_count"))
            else:
                series.add(name)
            # `key`, `result` (`ok`, `error`): label names are the backquoted
            # words outside parentheses.
            labels.update(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", labs)))
    if not series:
        raise SystemExit("no series found in " + METRICS_MD)
    return series, labels


def names_in(expr):
    """(metric names, label names) used in one PromQL expression (with
    Grafana variables)."""
    e = re.sub(r"\$\{?\w+\}?", "X", expr)                    # $job, ${instance}, $__rate_interval
    labels = set()
    # label_values(metric{...}, label) in template variable queries
    lv = re.match(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*$", e, re.S)
    if lv:
        e, labels = lv.group(1), {lv.group(2)}
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', e)  # strings
    for body in re.findall(r"\{([^}]*)\}", e):              # matchers
        labels.update(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", body))
    e = re.sub(r"\{[^}]*\}", " ", e)
    for kw, body in re.findall(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        labels.update(re.findall(r"\w+", body))
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)                        # ranges and subqueries
    metrics = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_KEYWORDS or word == "X":
            continue
        metrics.add(word)
    return metrics, labels


def rule_exprs():
    """Every `expr:` of seqd-alerts.yml (plain or block scalar), without a
    YAML parser."""
    exprs, cur, indent = [], None, 0
    with open(os.path.join(PROM, "seqd-alerts.yml")) as f:
        for line in f:
            if cur is not None:
                ind = len(line) - len(line.lstrip())
                if line.strip() and ind > indent:
                    cur.append(line.strip())
                    continue
                exprs.append(" ".join(cur))
                cur = None
            m = re.match(r"(\s*)(?:- )?expr:\s*(.*)$", line)
            if m:
                body = m.group(2).strip()
                if body in ("|", ">", "|-", ">-"):
                    cur, indent = [], len(m.group(1))
                else:
                    exprs.append(body)
    if cur is not None:
        exprs.append(" ".join(cur))
    return exprs


def markdown_anchors(text):
    """The anchors of a Markdown page as GitHub makes them: each heading
    lowercased, punctuation dropped, spaces as '-' (a repeated one gets -1,
    -2, ...), and explicit <a id=...> / <a name=...>."""
    anchors, seen = set(), {}
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not in_code:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            anchors.add(slug if n == 0 else "%s-%d" % (slug, n))
        anchors.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', line))
    return anchors


def runbook_problems(rules_text, anchors):
    """Each alert rule's runbook_url must be RUNBOOK_PREFIX + an anchor of
    docs/operations.md, the one of the heading that names the alert."""
    problems, rules = [], []
    for line in rules_text.splitlines():
        m = re.match(r"\s*- (alert|record):\s*(\S+)", line)
        if m:
            rules.append([m.group(1), m.group(2), None])
            continue
        m = re.match(r"\s*runbook_url:\s*[\"']?([^\"'\s]*)", line)
        if m and rules:
            rules[-1][2] = m.group(1)
    alerts = [(name, url) for kind, name, url in rules if kind == "alert"]
    if not alerts:
        problems.append("no alert rules found")
    for name, url in alerts:
        if url is None:
            problems.append("alert %s has no runbook_url annotation" % name)
        elif not url.startswith(RUNBOOK_PREFIX):
            problems.append("alert %s: runbook_url %r does not start with %s"
                            % (name, url, RUNBOOK_PREFIX))
        elif url[len(RUNBOOK_PREFIX):] not in anchors:
            problems.append("alert %s: runbook_url %r: no such anchor in docs/operations.md"
                            % (name, url))
        elif url[len(RUNBOOK_PREFIX):] != name.lower():
            problems.append("alert %s: runbook_url %r is not its own section (#%s)"
                            % (name, url, name.lower()))
    return problems


def dashboard_exprs():
    with open(DASHBOARD) as f:
        dash = json.load(f)                                   # must parse
    out = []

    def walk(o, where):
        if isinstance(o, dict):
            if isinstance(o.get("expr"), str):
                out.append((where, o["expr"]))
            for k, v in o.items():
                walk(v, where + "/" + (str(o.get("title")) if k == "targets" else k))
        elif isinstance(o, list):
            for v in o:
                walk(v, where)

    walk(dash.get("panels", []), "panels")
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and q:
            out.append(("variable " + v["name"], q))
    assert dash.get("schemaVersion", 0) >= 36, "schemaVersion"
    assert any(v.get("type") == "datasource" and v.get("name") == "DS_PROMETHEUS"
               for v in dash["templating"]["list"]), "no DS_PROMETHEUS datasource variable"
    return out


def promtool(*args):
    exe = shutil.which("promtool")
    if not exe:
        raise SystemExit("FAIL: promtool not found (apt-get install prometheus; scripts/deps.sh --test)")
    print("$ promtool " + " ".join(args), flush=True)
    r = subprocess.run([exe, *args], cwd=REPO)
    if r.returncode != 0:
        raise SystemExit("FAIL: promtool %s exited with %d" % (" ".join(args), r.returncode))


def self_test():
    m, l = names_in('histogram_quantile(0.99, sum by (interface, le) '
                    '(rate(seqd_request_duration_seconds_bucket{job=~"$job", status!~"a|b"}[$__rate_interval])))'
                    ' / on(instance) group_left sum(seqd_x offset 5m) > bool 0.1 and up == 1e3')
    assert m == {"seqd_request_duration_seconds_bucket", "seqd_x", "up"}, m
    assert l == {"interface", "le", "job", "status", "instance"}, l
    m, l = names_in('label_values(seqd_build_info{job=~"$job"}, instance)')
    assert m == {"seqd_build_info"} and l == {"job", "instance"}, (m, l)
    a = markdown_anchors("# Ops\n## What to do\n#### SeqdA\n```\n# not a heading\n```\n"
                         "## What to do\n<a id=\"x-y\"></a>\n")
    assert a == {"ops", "what-to-do", "seqda", "what-to-do-1", "x-y"}, a
    rules = ("  - alert: SeqdA\n    annotations:\n      runbook_url: \"docs/operations.md#seqda\"\n"
             "  - alert: SeqdB\n    annotations:\n      summary: x\n"
             "  - alert: SeqdC\n    annotations:\n      runbook_url: docs/operations.md#nope\n"
             "  - alert: SeqdD\n    annotations:\n      runbook_url: https://x/#seqdd\n"
             "  - alert: SeqdE\n    annotations:\n      runbook_url: docs/operations.md#seqda\n")
    p = runbook_problems(rules, {"seqda"})
    assert len(p) == 4 and all(x in " ".join(p) for x in ("SeqdB", "SeqdC", "SeqdD", "SeqdE")), p


def main():
    self_test()
    promtool("check", "config", "config/prometheus/prometheus.yml")
    promtool("check", "rules", "config/prometheus/seqd-alerts.yml")
    promtool("test", "rules", "config/prometheus/seqd-alerts.test.yml")

    series, labels = documented()
    series |= BUILTIN_SERIES
    labels |= BUILTIN_LABELS
    problems = []
    rules = rule_exprs()
    dash = dashboard_exprs()
    if len(rules) < 6 or len(dash) < 20:
        problems.append("found only %d rule and %d dashboard expressions" % (len(rules), len(dash)))
    for where, expr in [("alert rule", e) for e in rules] + dash:
        m, l = names_in(expr)
        if not m:
            problems.append("%s: no metric in %r" % (where, expr))
        for name in sorted(m - series):
            problems.append("%s: metric %s is not in docs/metrics.md: %s" % (where, name, expr))
        for name in sorted(l - labels):
            problems.append("%s: label %s is not in docs/metrics.md: %s" % (where, name, expr))
    with open(os.path.join(PROM, "seqd-alerts.yml")) as f, open(OPERATIONS_MD) as ops:
        problems += runbook_problems(f.read(), markdown_anchors(ops.read()))
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("OK: %d alert rule and %d dashboard expressions use only documented names;"
          " every alert's runbook_url is its section of docs/operations.md"
          % (len(rules), len(dash)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
