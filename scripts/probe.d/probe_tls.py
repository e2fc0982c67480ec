"""TLS listener checks.

usage: probe_tls.py testssl NAME JSONFILE   verdict on a testssl.sh --jsonfile
       probe_tls.py handshakes NAME PORT CAFILE   openssl s_client handshakes

testssl: no HIGH or CRITICAL finding; SSLv2, SSLv3, TLS 1.0 and 1.1 not
offered; every cipher offered has an ephemeral key exchange (ECDHE or DHE;
every TLS 1.3 suite is). handshakes (the quick check): TLS 1.0 and 1.1 and
non-forward-secret or CBC TLS 1.2 suites are refused; TLS 1.2 ECDHE with
AES-GCM and TLS 1.3 are accepted.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import log, result  # noqa: E402


def testssl(name, path):
    with open(path) as f:
        findings = json.load(f)
    bad = ["%s %s: %s" % (x["id"], x["severity"], x["finding"][:80]) for x in findings
           if x.get("severity") in ("HIGH", "CRITICAL")]
    for proto in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
        for x in findings:
            if x["id"] == proto and not x["finding"].startswith("not offered"):
                bad.append("%s %s" % (proto, x["finding"]))
    ciphers = [x for x in findings if x["id"].startswith("cipher-") or
               x["id"].startswith("cipher_x")]
    for x in ciphers:
        cols = x["finding"].split()
        # "TLS 1.2   xc02c   ECDHE-ECDSA-AES256-GCM-SHA384   ECDH 253 ..."
        if not any(c in ("ECDH", "DH") for c in cols[4:6]):
            bad.append("not forward-secret: " + x["finding"][:60])
    offered = [x["id"] for x in findings if x["id"] in ("TLS1_2", "TLS1_3") and
               x["finding"].startswith("offered")]
    vulns = len([x for x in findings if x["id"] in (
        "heartbleed", "CCS", "ticketbleed", "ROBOT", "secure_renego", "secure_client_renego",
        "CRIME_TLS", "BREACH", "POODLE_SSL", "fallback_SCSV", "SWEET32", "FREAK", "DROWN",
        "LOGJAM", "BEAST", "LUCKY13", "RC4")])
    for b in bad:
        log("  " + b)
    ok = not bad and offered and len(ciphers) > 0 and vulns >= 10
    result("testssl.sh " + name, "no HIGH/CRITICAL; TLS 1.2+ only; FS ciphers only",
           "%d findings, %d vulnerability checks, %d ciphers, offered %s, %d problems" % (
               len(findings), vulns, len(ciphers), "+".join(offered) or "none", len(bad)),
           ok)


def handshake(port, ca, *args):
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                        "-CAfile", ca, "-verify_return_error", *args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    return r.returncode == 0 and "Cipher is (NONE)" not in r.stdout


def handshakes(name, port, ca):
    low = ["-cipher", "ALL:@SECLEVEL=0"]
    cases = [
        ("TLS 1.0", False, ["-tls1"] + low),
        ("TLS 1.1", False, ["-tls1_1"] + low),
        ("TLS 1.2 RSA kx", False, ["-tls1_2", "-cipher", "AES128-GCM-SHA256:AES256-GCM-SHA384:"
                                   "AES128-SHA256:AES128-SHA"]),
        ("TLS 1.2 ECDHE CBC", False, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA256:"
                                      "ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA:"
                                      "ECDHE-ECDSA-AES128-SHA"]),
        ("TLS 1.2 DHE CBC/GCM", False, ["-tls1_2", "-cipher", "DHE-RSA-AES128-SHA:"
                                        "DHE-RSA-AES128-GCM-SHA256"]),
        ("TLS 1.2 ECDHE GCM", True, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256:"
                                     "ECDHE-ECDSA-AES128-GCM-SHA256"]),
        ("TLS 1.3", True, ["-tls1_3"]),
    ]
    wrong = []
    for label, want, args in cases:
        got = handshake(port, ca, *args)
        if got != want:
            wrong.append("%s %s" % (label, "accepted" if got else "refused"))
    result("TLS handshakes " + name, "1.0/1.1, non-FS and CBC refused; 1.2 GCM, 1.3 ok",
           "%d/%d as expected%s" % (len(cases) - len(wrong), len(cases),
                                    (": " + ", ".join(wrong)) if wrong else ""), not wrong)


if __name__ == "__main__":
    if sys.argv[1] == "testssl":
        testssl(sys.argv[2], sys.argv[3])
    else:
        handshakes(sys.argv[2], int(sys.argv[3]), sys.argv[4])
