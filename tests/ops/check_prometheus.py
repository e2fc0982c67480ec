"""ctest prometheus_rules: promtool checks the Prometheus config and the alert
rules and runs their unit tests; the Grafana dashboard must be valid JSON; and
every metric (and label) name in the alert rules and the dashboard must be one
of docs/metrics.md. Standard library only. Fails (never skips) without promtool.
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

# Series Prometheus itself makes, allowed besides docs/metrics.md.
BUILTIN_SERIES = {"up"}
# Labels Prometheus adds (job, instance), the histogram bucket label and the
# alert rules' own; the rest come from docs/metrics.md.
BUILTIN_LABELS = {"job", "instance", "le", "__name__"}

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                   "and", "or", "unless", "offset", "atan2", "inf", "nan"}


def documented():
    """(series names, label names) of docs/metrics.md's Series table. A
    histogram `x` documents x_bucket, x_sum and x_count."""
    series, labels = set(), set()
    with open(METRICS_MD) as f:
        for line in f:
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
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("OK: %d alert rule and %d dashboard expressions use only documented names"
          % (len(rules), len(dash)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
