"""The same line-preserving split as `tributary repartition`, done by DuckDB.

Reads the export's data files as lines (read_csv with one VARCHAR column, no
quoting, a delimiter that never occurs in export lines), takes the entity type
with json_extract_string, and writes one gzip CSV file set per entity with
COPY ... PARTITION_BY, the line unchanged. Prints the item count it wrote.

    duckdb_split.py --out DIR [--threads N] FILE[,FILE...]
"""
import argparse
import os
import sys

import duckdb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--memory-limit", default=None)
    ap.add_argument("files")
    a = ap.parse_args()
    # An empty partition's data file is empty, not an empty gzip stream,
    # which DuckDB refuses; it holds no lines.
    files = [f for f in a.files.split(",") if os.path.getsize(f) > 0]
    con = duckdb.connect()
    con.execute(f"SET threads = {a.threads}")
    if a.memory_limit:
        con.execute(f"SET memory_limit = '{a.memory_limit}'")
    src = (
        "read_csv($files, columns = {'line': 'VARCHAR'}, header = false, delim = '\x01', "
        "quote = '', escape = '', compression = 'gzip', auto_detect = false, "
        "max_line_size = 4194304, parallel = true)"
    )
    query = (
        f"SELECT line, coalesce(nullif(json_extract_string(line, '$.Item.EntityType.S'), ''), '_unknown') AS entity FROM {src}"
    )
    con.execute(
        f"COPY ({query}) TO '{a.out}' (FORMAT csv, PARTITION_BY (entity), COMPRESSION gzip, "
        "HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01', OVERWRITE_OR_IGNORE true)",
        {"files": files},
    )
    n = con.execute(f"SELECT count(*) FROM read_csv('{a.out}/*/*.csv.gz', columns = {{'line': 'VARCHAR'}}, header = false, delim = '\x01', quote = '', escape = '', auto_detect = false, max_line_size = 4194304)").fetchone()[0]
    print(f"duckdb {duckdb.__version__}: {n} lines written")


if __name__ == "__main__":
    sys.exit(main())
