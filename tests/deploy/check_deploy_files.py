#!/usr/bin/env python3
"""Checks the deployment files without running containers (ctest deploy_files).

- deploy/compose.yaml: three seqd services in cluster mode on the mariadb
  service, each with its own advertised address and published ports; every
  SEQD_* variable it sets is an option `seqd --help` lists; every secret it
  mounts is one deploy/make-secrets.sh makes; the files it mounts exist.
- The Dockerfile's SEQD_* variables are options too, and it runs as non-root.
- deploy/prometheus/prometheus.yml with seqd's alert rules beside it passes
  `promtool check config`; it scrapes the three seqd services.
- The Grafana provisioning points at the mounted dashboard.

usage: check_deploy_files.py SEQD_BINARY SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

seqd, src = sys.argv[1], sys.argv[2]
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


help_text = subprocess.run([seqd, "--help"], check=True, capture_output=True, text=True).stdout
options = set(re.findall(r"\(env (SEQD_[A-Z0-9_]+)\)", help_text))
check(len(options) > 40, "seqd --help lists only %d options" % len(options))

deploy = os.path.join(src, "deploy")
with open(os.path.join(deploy, "compose.yaml")) as f:
    compose = yaml.safe_load(f)
services = compose["services"]
seqds = sorted(n for n in services if n.startswith("seqd"))
check(seqds == ["seqd1", "seqd2", "seqd3"], "seqd services: %s" % seqds)
with open(os.path.join(deploy, "make-secrets.sh")) as f:
    make_secrets = f.read()
advertised, published = set(), set()
for name in seqds:
    s = services[name]
    env = s.get("environment", {})
    for var in env:
        check(var in options, "%s: %s is no seqd option" % (name, var))
    check(env.get("SEQD_CLUSTER") == "on", "%s: not in cluster mode" % name)
    check(str(env.get("SEQD_STORE", "")).startswith("mysql://seqd@mariadb:"),
          "%s: store is not the mariadb service" % name)
    check(env.get("SEQD_ADVERTISE") == "%s:%s" % (name, env.get("SEQD_TCP_PORT")),
          "%s: advertises %s" % (name, env.get("SEQD_ADVERTISE")))
    advertised.add(env.get("SEQD_ADVERTISE"))
    for secret in s.get("secrets", []):
        check(secret in compose["secrets"], "%s: undeclared secret %s" % (name, secret))
    for var in ("SEQD_TOKENS_FILE", "SEQD_CLUSTER_TOKEN_FILE", "SEQD_STORE_PASSWORD_FILE"):
        path = str(env.get(var, ""))
        check(path.startswith("/run/secrets/") and path[13:] in s.get("secrets", []),
              "%s: %s=%s is not one of its secrets" % (name, var, path))
    published.update(p.split(":")[0] for p in s.get("ports", []))
    check(s.get("depends_on", {}).get("mariadb", {}).get("condition") == "service_healthy",
          "%s: does not wait for a healthy mariadb" % name)
check(len(advertised) == 3, "advertised addresses: %s" % advertised)
check(len(published) == 6, "published host ports: %s" % sorted(published))
for secret, spec in compose["secrets"].items():
    check(spec["file"] == "./secrets/" + secret, "secret %s: file %s" % (secret, spec["file"]))
    check('"$dir/%s"' % secret in make_secrets or "token %s " % secret in make_secrets,
          "deploy/make-secrets.sh does not make %s" % secret)
for name, s in services.items():
    for volume in s.get("volumes", []):
        host = volume.split(":")[0]
        if host.startswith("."):
            check(os.path.exists(os.path.join(deploy, host)), "%s mounts missing %s" % (name, host))

with open(os.path.join(src, "Dockerfile")) as f:
    dockerfile = f.read()
for var in re.findall(r"(?<!-D)\b(SEQD_[A-Z0-9_]+)=", dockerfile):  # not -D cmake options
    check(var in options or var == "SEQD_GIT_COMMIT", "Dockerfile: %s is no seqd option" % var)
check(re.search(r"^USER seqd$", dockerfile, re.M) is not None, "Dockerfile: no USER seqd")

prom_dir = tempfile.mkdtemp()
try:
    shutil.copy(os.path.join(deploy, "prometheus", "prometheus.yml"), prom_dir)
    shutil.copy(os.path.join(src, "config", "prometheus", "seqd-alerts.yml"), prom_dir)
    r = subprocess.run(["promtool", "check", "config", os.path.join(prom_dir, "prometheus.yml")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "promtool check config: %s%s" % (r.stdout, r.stderr))
finally:
    shutil.rmtree(prom_dir)
with open(os.path.join(deploy, "prometheus", "prometheus.yml")) as f:
    prom = yaml.safe_load(f)
targets = [t for sc in prom["scrape_configs"] for c in sc["static_configs"] for t in c["targets"]]
check(sorted(targets) == ["%s:8080" % n for n in seqds], "Prometheus targets: %s" % targets)

with open(os.path.join(deploy, "grafana", "provisioning", "dashboards", "seqd.yml")) as f:
    provider = yaml.safe_load(f)["providers"][0]
mounts = dict(v.split(":")[1::-1] for v in services["grafana"]["volumes"] if v.startswith("."))
dash_dir = mounts.get(provider["options"]["path"])
check(dash_dir is not None and
      os.path.exists(os.path.join(deploy, dash_dir, "seqd-dashboard.json")),
      "Grafana's dashboard path %s is not the mounted config/grafana" % provider["options"]["path"])

if problems:
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    sys.exit(1)
print("OK: compose.yaml (3 seqd in cluster mode; variables among %d options), Dockerfile, "
      "Prometheus, Grafana provisioning" % len(options))
