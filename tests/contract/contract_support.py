"""What ctest openapi_contract (test_contract.py) runs on: the spec, a
subset of JSON Schema for checking answers outside Prism, the tokens, Prism
as a process, and the requests (through Prism, straight to seqd, event
streams) with the checks every answer gets.
"""
import hashlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from harness import REPO, Seqd, free_port, store_spec  # noqa: E402,F401 (Seqd, store_spec: for the suite)

SPEC = os.path.join(REPO, "docs", "openapi.yaml")
PRISM = os.path.join(REPO, "tests", "node", "node_modules", ".bin", "prism")

SECRETS = {
    "ops": "sqd_contract-ops-0123456789",
    "orders": "sqd_contract-orders-0123456789",
    "reader": "sqd_contract-reader-0123456789",
    "burst": "sqd_contract-burst-0123456789",
}
SCOPES = {
    "ops": "admin,ids:*,snowflake,metrics,msg:send:*,msg:read:*,msg:admin:*",
    "orders": "ids:order_",
    "reader": "msg:read:sg_team",
    "burst": "ids:si_",
}
BAD = "sqd_not-a-token-of-this-server"



def load_spec():
    with open(SPEC) as f:
        return yaml.safe_load(f)


def spec_operations(spec):
    ops = set()
    for path, item in spec["paths"].items():
        for method in item:
            if method in ("get", "put", "post", "delete", "patch"):
                ops.add((method.upper(), path))
    return ops


def resolve(schema, spec):
    while "$ref" in schema:
        node = spec
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def schema_errors(value, schema, spec, where="body"):
    """The ways `value` breaks `schema`: the subset of JSON Schema the
    spec's error shape uses (type, const, enum, required, properties,
    additionalProperties)."""
    schema = resolve(schema, spec)
    errors = []
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        checks = {"object": lambda v: isinstance(v, dict), "string": lambda v: isinstance(v, str),
                  "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                  "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
                  "array": lambda v: isinstance(v, list)}
        if not any(checks[n](value) for n in names):
            return ["%s: %r is not %s" % (where, value, types)]
    if "const" in schema and value != schema["const"]:
        errors.append("%s: %r is not %r" % (where, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not one of the spec's values" % (where, value))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append("%s: missing %s" % (where, name))
        for name, v in value.items():
            if name in props:
                errors += schema_errors(v, props[name], spec, where + "." + name)
            elif schema.get("additionalProperties") is False:
                errors.append("%s: unexpected %s" % (where, name))
    return errors


def tokens_text():
    return "".join("%s %s %s\n" % (n, hashlib.sha256(SECRETS[n].encode()).hexdigest(), SCOPES[n])
                   for n in SECRETS)


class Prism:
    """`prism proxy SPEC UPSTREAM --errors` on a free port, its log in a file."""

    def __init__(self, upstream_port, log_path):
        if not os.access(PRISM, os.X_OK):
            raise RuntimeError("%s is missing: run scripts/node-deps" % PRISM)
        self.port = free_port()
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [PRISM, "proxy", SPEC, "http://127.0.0.1:%d" % upstream_port, "--errors",
             "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
        deadline = time.time() + 45
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prism exited: " + self.text()[-3000:])
            if "Prism is listening" in self.text():
                return
            time.sleep(0.1)
        raise RuntimeError("prism did not start: " + self.text()[-3000:])

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


class ContractCalls:
    """Requests and their checks, for a unittest.TestCase with `prism`,
    `seqd`, `spec` and `seen` ((method, template) -> statuses answered)."""

    every_answer_has_request_id = False  # True: successes too must carry X-Request-Id

    # --- requests ------------------------------------------------------------

    def call(self, method, template, params=None, query=None, token="ops", body=None,
             headers=None, expect=200, raw_body=None):
        """Sends one request through Prism and checks it was clean and
        answered `expect`; returns (status, headers, body bytes)."""
        path = template
        for name, value in (params or {}).items():
            path = path.replace("{%s}" % name, urllib.parse.quote(str(value), safe=""))
        if query:
            path += "?" + urllib.parse.urlencode(query, doseq=True)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + (BAD if token == "bad" else SECRETS[token])
        data = raw_body
        if body is not None:
            data = json.dumps(body)
        if data is not None or method in ("POST", "PUT"):
            h.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.prism.port, timeout=30)
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            payload = r.read()
        finally:
            conn.close()
        what = "%s %s -> %d %s" % (method, path, r.status, payload[:300])
        violations = r.getheader("sl-violations")
        self.assertIsNone(violations, "Prism reports violations: %s\n%s" % (violations, what))
        self.assertNotIn("problem+json", r.getheader("Content-Type", ""),
                         "Prism answered by itself: " + what)
        self.assertEqual(r.status, expect, what)
        if self.every_answer_has_request_id:  # errors: the spec requires it, Prism checks
            self.assertTrue(r.getheader("X-Request-Id"), "no X-Request-Id: " + what)
        self.seen.setdefault((method, template), set()).add(r.status)
        return r.status, r, payload

    def json_call(self, *args, **kw):
        _, _, payload = self.call(*args, **kw)
        return json.loads(payload)

    def direct(self, method, path, token=None, data=None, headers=None):
        """Sends a request the spec does not describe straight to seqd."""
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + SECRETS[token]
        conn = http.client.HTTPConnection("127.0.0.1", self.seqd.port, timeout=10)
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            payload = r.read()
        finally:
            conn.close()
        return r, payload

    def open_stream(self, path, token="ops", headers=None):
        """A stream straight from seqd: (connection, response); 200 checked."""
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + SECRETS[token]
        conn = http.client.HTTPConnection("127.0.0.1", self.seqd.port, timeout=10)
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        if r.status != 200:
            body = r.read()
            conn.close()
            self.fail("GET %s -> %d %s" % (path, r.status, body[:300]))
        self.assertEqual(r.getheader("Content-Type"), "text/event-stream")
        self.seen.setdefault(("GET", "/events" if path.startswith("/events")
                              else "/conversations/{conv}/events"), set()).add(200)
        return conn, r

    def read_events(self, r, n):
        """The next `n` message events of a stream: (id, data) each, every
        data checked against the spec's Message schema (conv_id aside)."""
        events, fields = [], {}
        while len(events) < n:
            line = r.readline().decode()
            self.assertTrue(line, "the stream ended after %d events" % len(events))
            line = line.rstrip("\r\n")
            if line == "":
                if fields.get("event") == "message":
                    data = json.loads(fields["data"])
                    message = {k: v for k, v in data.items() if k != "conv_id"}
                    errors = schema_errors(message, {"$ref": "#/components/schemas/Message"},
                                           self.spec)
                    self.assertEqual(errors, [], fields)
                    events.append((fields["id"], data))
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
        return events

    def check_error_shape(self, r, payload, code):
        what = "%d %s" % (r.status, payload[:300])
        self.assertEqual(r.getheader("Content-Type"), "application/json", what)
        body = json.loads(payload)
        errors = schema_errors(body, {"$ref": "#/components/schemas/Error"}, self.spec)
        self.assertEqual(errors, [], what)
        self.assertEqual(body["error"]["code"], code, what)
