#!/usr/bin/env python3
"""ctest openapi_routes: the server's route table and docs/openapi.yaml list
the same (method, path template) pairs.

  check_routes.py PRINT_HTTP_ROUTES SPEC

PRINT_HTTP_ROUTES prints the table (print_http_routes.cc); SPEC is the
OpenAPI file. Fails, naming each pair, on any pair in one and not the other.

PENDING_ROUTES: routes the spec describes ahead of the server (built in
parallel with it). Each must be in
the spec and NOT yet in the table; the check says so on every run, and fails
once one reaches the table, so the entry is removed then.
"""
import subprocess
import sys

import yaml

PENDING_ROUTES: set = set()

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def table_routes(printer):
    out = subprocess.run([printer], check=True, capture_output=True, text=True).stdout
    routes = set()
    for line in out.splitlines():
        method, path = line.split(" ", 1)
        routes.add((method, path))
    if not routes:
        raise SystemExit("openapi_routes: %s printed no routes" % printer)
    return routes


def spec_routes(spec_path):
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    routes = set()
    for path, item in spec.get("paths", {}).items():
        for method in item:
            if method in METHODS:
                routes.add((method.upper(), path))
    return routes


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    table = table_routes(sys.argv[1])
    spec = spec_routes(sys.argv[2])
    problems = []
    for m, p in sorted(table - spec):
        problems.append("in the route table, not in the spec: %s %s" % (m, p))
    for m, p in sorted(spec - table - PENDING_ROUTES):
        problems.append("in the spec, not in the route table: %s %s" % (m, p))
    for m, p in sorted(PENDING_ROUTES & table):
        problems.append("pending route now in the route table, remove it from PENDING_ROUTES: "
                        "%s %s" % (m, p))
    for m, p in sorted(PENDING_ROUTES - spec):
        problems.append("pending route missing from the spec: %s %s" % (m, p))
    for m, p in sorted(PENDING_ROUTES & spec - table):
        print("NOTE: %s %s is in the spec but pending in the server (PENDING_ROUTES)" % (m, p))
    if problems:
        print("\n".join(problems))
        print("openapi_routes: FAILED (%d differences)" % len(problems))
        return 1
    print("openapi_routes: %d routes in both the table and the spec" % len(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
