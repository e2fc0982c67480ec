#!/usr/bin/env python3
"""Runs one ctest suite outside ctest's scheduler, exactly as ctest defines it.

    scripts/lib/run_suite.py BUILD_DIR SUITE

Reads the suite's command, environment, working directory and timeout from
`ctest --show-only=json-v1` in BUILD_DIR, runs it, prints its output and its
wall time, and exits with its status (1 on a timeout). The test command runs
soak_short this way, beside the whole Release ctest run: ctest cannot run any
suite beside its RUN_SERIAL ones, and a 5-minute soak, built to tolerate a
loaded machine, would otherwise hold them all back until it ends.
"""
import json
import os
import signal
import subprocess
import sys
import time


def definition(build_dir, suite):
    out = subprocess.run(["ctest", "--show-only=json-v1", "-R", f"^{suite}$"], cwd=build_dir,
                         check=True, capture_output=True, text=True).stdout
    tests = [t for t in json.loads(out)["tests"] if t["name"] == suite]
    if len(tests) != 1:
        sys.exit(f"run_suite: no ctest suite named {suite} in {build_dir}")
    return tests[0]


def stop_group(proc):
    """SIGTERM to the suite's process group (its cleanup traps run), then
    SIGKILL to whatever is left after 15 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build_dir, suite = sys.argv[1], sys.argv[2]
    test = definition(build_dir, suite)
    env = dict(os.environ)
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    for item in props.get("ENVIRONMENT", []):
        key, _, value = item.partition("=")
        env[key] = value
    cwd = props.get("WORKING_DIRECTORY", build_dir)
    timeout = float(props.get("TIMEOUT", 1500))
    start = time.monotonic()
    # Its own process group, so that a timeout stops what it started too.
    proc = subprocess.Popen(test["command"], cwd=cwd, env=env, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"run_suite: {suite} timed out after {timeout:.0f} s", flush=True)
        stop_group(proc)
        rc = 1
    took = time.monotonic() - start
    print(f"run_suite: {suite} {'passed' if rc == 0 else 'FAILED'} in {took:.1f} s", flush=True)
    sys.exit(0 if rc == 0 else 1)


if __name__ == "__main__":
    main()
