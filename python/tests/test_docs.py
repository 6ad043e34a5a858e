"""The Python blocks of the docs, run: each block is marked in its page as
taken from this file (`<!-- file: python/tests/test_docs.py -->`), and
tests/js/docs.test.mjs checks that its lines appear here in order. What a
block leaves to the reader (its files, its frames) is made first."""

import json

import pytest

CONFIG = {"protocol": "oue", "epsilon": 1, "domain": ["chrome", "safari", "edge", "firefox"]}


def export(cli, config, values):
    """day.parquet (an export) and late.jsonl (randomized lines) of `config`
    in the working folder; the CLI's estimate of both."""
    with open("config.json", "w") as f:
        json.dump(config, f)
    with open("values", "w") as f:
        f.write("\n".join(values * 50) + "\n")
    with open("late.jsonl", "wb") as f:
        f.write(cli("randomize", "--config", "config.json", "--seed", "1", "values"))
    with open("day.jsonl", "wb") as f:
        f.write(cli("randomize", "--config", "config.json", "--seed", "2", "values"))
    cli("export", "--config", "config.json", "--format", "parquet", "-o", "day.parquet", "day.jsonl")
    return json.loads(cli("aggregate", "--config", "config.json", "--format", "json", "day.jsonl", "late.jsonl"))


@pytest.fixture()
def exported(cli, tmp_path, monkeypatch):
    """CONFIG's files, in a working folder of the test's own."""
    monkeypatch.chdir(tmp_path)
    return export(cli, CONFIG, ["chrome", "chrome", "safari", "edge"])


def test_python_md_a_first_aggregation(exported):
    import localdp

    config = {"protocol": "oue", "epsilon": 1, "domain": ["chrome", "safari", "edge", "firefox"]}
    agg = localdp.Aggregator(config)            # the same config as the CLI's and the JS package's
    agg.add_parquet("day.parquet")              # `localdp export`, the collector's reports.parquet
    agg.add_json_lines("late.jsonl")            # JSON Lines, as `localdp randomize` writes them
    agg.estimate()                              # the dict `localdp aggregate --format json` prints
    agg.to_pandas()                             # one row per value: estimate, std_error, ci95_low, ci95_high

    assert json.dumps(agg.estimate()) == json.dumps(exported)
    assert len(agg.to_pandas()) == 4


def test_python_md_arrow_data(exported):
    import localdp
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    config = CONFIG
    agg = localdp.Aggregator(config)
    import os
    os.makedirs("reports")
    os.replace("day.parquet", "reports/day.parquet")
    # Without the cast, Polars' Categorical id is counted malformed.
    raw = localdp.Aggregator(config).add_arrow(pl.read_parquet("reports/day.parquet"))
    assert raw["rejected"]["malformed"] == 200

    import pyarrow as pa
    ids = pa.array([localdp.Client(config).id] * 3).dictionary_encode()
    table = pa.table({"id": ids, "bits": pa.array([b"\x01", b"\x02", b"\x04"], pa.binary(1))})
    agg.add_arrow(table)
    polars_frame = pl.read_parquet("reports/day.parquet").with_columns(pl.col("id").cast(pl.String))
    agg.add_arrow(polars_frame)        # Polars: its BinaryView and LargeList columns are narrowed
    agg.add_arrow(duckdb.sql("SELECT * FROM 'reports/*.parquet'").arrow())

    # The three rows, then the day's 200 reports twice (from Polars and from DuckDB).
    assert agg.n == 3 + 2 * 200


def test_columnar_md_any_parquet_reader(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    export(cli, {"protocol": "grr", "epsilon": 2, "domain": 8}, ["1", "1", "2", "3"])
    import pyarrow.parquet as pq
    table = pq.read_table("day.parquet")
    table.schema.metadata[b"localdp.config"]                      # the config
    pq.read_metadata("day.parquet").metadata[b"localdp.rejected"]  # the rejections
    table.column("value").to_pylist()[:5]                         # GRR indices

    assert json.loads(table.schema.metadata[b"localdp.config"])["protocol"] == "grr"
    assert json.loads(pq.read_metadata("day.parquet").metadata[b"localdp.rejected"]) is not None
    assert all(0 <= v < 8 for v in table.column("value").to_pylist())
