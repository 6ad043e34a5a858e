#!/usr/bin/env python3
"""Cross-check that pyarrow reads localdp's Parquet files (docs/COLUMNAR.md).

For every config of columnar/tests/protocols/mod.rs: simulate reports with
`localdp randomize --seed`, export them with `localdp export --format
parquet`, read the file with pyarrow, and check the schema (column names,
types, nullability), the metadata keys, and every row against its JSON line.

Not part of `npm test`: pyarrow comes from PyPI into a throwaway venv:

    python3 -m venv /tmp/pa && /tmp/pa/bin/pip install pyarrow
    cargo build -p localdp-cli
    /tmp/pa/bin/python scripts/parquet_check.py [target/debug/localdp]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "localdp")
PROTOCOLS = os.path.join(ROOT, "columnar", "tests", "protocols", "mod.rs")
TYPES = {"value": pa.uint64(), "seed": pa.uint32(), "cohort": pa.uint32(),
         "attributes": pa.list_(pa.field("item", pa.uint32(), nullable=False)),
         "values": pa.list_(pa.field("item", pa.uint64(), nullable=False))}


def configs():
    """(config, values) from the Rust list: r#"..."# then &["..", ..]."""
    text = open(PROTOCOLS).read()
    for config, values in re.findall(r'\(r#"(.*?)"#, &\[(.*?)\]\)', text):
        yield config, json.loads("[" + values + "]")


def run(args, stdin=""):
    return subprocess.run([BIN] + args, input=stdin, capture_output=True, text=True, check=True).stdout


def check(config, values, workdir, k):
    config_path = os.path.join(workdir, f"config-{k}.json")
    open(config_path, "w").write(config)
    lines = run(["randomize", "--config", config_path, "--seed", str(k)],
                "".join(values[i % len(values)] + "\n" for i in range(200))).splitlines()
    jsonl = os.path.join(workdir, f"reports-{k}.jsonl")
    open(jsonl, "w").write("\n".join(lines + ["not a report"]) + "\n")
    path = os.path.join(workdir, f"reports-{k}.parquet")
    run(["export", "--config", config_path, "--format", "parquet", "-o", path, "--row-group-size", "64", jsonl])

    table = pq.read_table(path)
    metadata = pq.read_metadata(path)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert meta["localdp.version"] == "1", meta
    assert json.loads(meta["localdp.config"]) == json.loads(config)
    # The rejections are counted once the rows are written: they are in the
    # footer's key-value metadata, not in the schema embedded before the rows.
    footer = {k.decode(): v.decode() for k, v in metadata.metadata.items()}
    assert footer["localdp.config"] == meta["localdp.config"]
    rejected = json.loads(footer["localdp.rejected"])
    assert rejected["malformed"] == 1 and sum(rejected.values()) == 1, rejected
    assert metadata.num_row_groups == 4 and table.num_rows == 200, (metadata.num_row_groups, table.num_rows)

    reports = [json.loads(line) for line in lines]
    identity = table.schema.field("id")
    assert identity.type == pa.dictionary(pa.int32(), pa.string()) and not identity.nullable
    names = [f.name for f in table.schema]
    used = [n for n in ("value", "seed", "cohort", "bits", "attributes", "values") if any(n in r for r in reports)]
    assert names == ["id"] + used, names
    for name in used:  # nullable exactly where some reports lack the field
        assert table.schema.field(name).nullable == any(name not in r for r in reports), name
    for field in table.schema:
        if field.name in TYPES:
            assert field.type == TYPES[field.name], (field.name, field.type)
        elif field.name == "bits":
            assert pa.types.is_fixed_size_binary(field.type) or field.type == pa.binary(), field.type
    rows = table.to_pylist()
    for row, report in zip(rows, reports):
        # Metric::id(): the envelope's protocol, epsilon (as JSON writes it) and domain.
        assert row["id"] == f'{report["protocol"]}:{json.dumps(report["epsilon"])}:{report["domain"]}', row["id"]
        for name in names[1:]:
            want = report.get(name)
            if name == "bits" and want is not None:
                want = bytes.fromhex(want)
            assert row[name] == want, (name, row[name], want)
    return reports[0]["protocol"], names[1:]


def main():
    with tempfile.TemporaryDirectory() as workdir:
        for k, (config, values) in enumerate(configs()):
            protocol, columns = check(config, values, workdir, k)
            print(f"ok  {protocol:<13} {', '.join(columns)}")
    print(f"pyarrow {pa.__version__} read every file")


if __name__ == "__main__":
    main()
