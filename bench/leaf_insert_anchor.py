#!/usr/bin/env python3
"""The database's own ceiling for new keys: ROWS new leaf_alloc rows
(max_id 1, step 100, as seqd's auto-created rows) inserted in BATCH-row
transactions (one multi-row INSERT and a COMMIT each), the same store seqd
uses in the same run (bench/new_keys_bench.sh).

  leaf_insert_anchor.py mysql://user:pass@host:port/db PREFIX [ROWS] [CONNECTIONS] [BATCH]
  leaf_insert_anchor.py sqlite:/path/file.db PREFIX [ROWS] [CONNECTIONS] [BATCH]

MariaDB: CONNECTIONS `mariadb` client processes, each fed its share of the
transactions (the SQL is generated before the clock starts). SQLite: one
writer (SQLite has one), WAL with synchronous=FULL as seqd opens it, the
table as seqd creates it.
Prints one JSON line: {"rows": N, "seconds": S, "rows_per_s": R}.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse

CREATE = ("CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', "
          "max_id bigint(20) NOT NULL DEFAULT '1', step int(11) NOT NULL, "
          "description varchar(256) DEFAULT NULL, update_time timestamp NOT NULL DEFAULT "
          "CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag)) ENGINE=InnoDB")


def mariadb(url, prefix, rows, connections, batch):
    u = urllib.parse.urlparse(url)
    args = ["mariadb", "--no-defaults", "-h", u.hostname, "-P", str(u.port or 3306),
            "-u", urllib.parse.unquote(u.username or ""),
            "-p" + urllib.parse.unquote(u.password or ""), u.path.lstrip("/")]
    subprocess.run(args, input=CREATE + ";\n", text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for c in range(connections):
            path = os.path.join(tmp, f"c{c}.sql")
            with open(path, "w") as f:
                f.write("SET autocommit=0;\n")
                mine = list(range(c, rows, connections))
                for at in range(0, len(mine), batch):
                    values = ",".join(f"('{prefix}{i}',1,100,'auto-created')"
                                      for i in mine[at:at + batch])
                    f.write("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES "
                            f"{values};\nCOMMIT;\n")
            files.append(path)
        start = time.monotonic()
        procs = [subprocess.Popen(args, stdin=open(p)) for p in files]
        if any(p.wait() != 0 for p in procs):
            sys.exit("anchor: an INSERT failed")
        return time.monotonic() - start


def sqlite(path, prefix, rows, batch):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag VARCHAR(128) PRIMARY KEY, "
               "max_id BIGINT NOT NULL DEFAULT 1, step INT NOT NULL, "
               "description VARCHAR(256) DEFAULT NULL, "
               "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)")
    start = time.monotonic()
    for at in range(0, rows, batch):
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) "
                       "VALUES (?, 1, 100, 'auto-created')",
                       ((f"{prefix}{i}",) for i in range(at, min(rows, at + batch))))
        db.execute("COMMIT")
    return time.monotonic() - start


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    spec, prefix = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    connections = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    if spec.startswith("sqlite:"):
        seconds = sqlite(spec[len("sqlite:"):], prefix, rows, batch)
    else:
        seconds = mariadb(spec, prefix, rows, connections, batch)
    print(json.dumps({"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds}))


if __name__ == "__main__":
    main()
