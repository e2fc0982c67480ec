"""Tokens files for seqd's --tokens-file (docs/security.md): one line per
token, `id sha256-of-secret-in-hex scopes`, and the named test tokens the
security suites share. Standard library only.
"""
import hashlib
import os

SECRETS = {
    "ops": "sqd_ops-secret-0123456789",
    "orders": "sqd_orders-secret-0123456789",
    "chat": "sqd_chat-secret-0123456789",
    "reader": "sqd_reader-secret-0123456789",
    "scraper": "sqd_scraper-secret-0123456789",
}
SCOPES = {
    "ops": "admin,ids:*,msg:admin:*",
    "orders": "ids:order_",
    "chat": "msg:send:sg_team,msg:read:sg_team",
    "reader": "msg:read:sg_team",
    "scraper": "metrics",
}


def token_line(name, secret, scopes):
    """One tokens-file line (no newline): the id, the secret's SHA-256 in
    hex, the scopes."""
    return "%s %s %s" % (name, hashlib.sha256(secret.encode()).hexdigest(), scopes)


def tokens_file(directory, text):
    """Writes `text` (tokens-file lines) to `directory`/tokens; its path."""
    path = os.path.join(directory, "tokens")
    with open(path, "w") as f:
        f.write(text)
    return path


def tokens_text(names, scopes=None):
    """A tokens file holding the test tokens `names` (keys of SECRETS), with
    the scopes of `scopes` (default SCOPES)."""
    scopes = scopes or SCOPES
    lines = ["# test tokens"] + [token_line(n, SECRETS[n], scopes[n]) for n in names]
    return "\n".join(lines) + "\n"
