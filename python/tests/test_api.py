"""The API's shapes: the client, the Arrow sources (pyarrow, Polars, a
RecordBatchReader), to_pandas and the docstrings (the stub: mypy --strict
and stubtest in scripts/test-python.sh)."""

import doctest
import inspect
import json
from pathlib import Path

import pyarrow as pa
import pytest

import localdp

GRR = {"protocol": "grr", "epsilon": 1, "domain": 1024}


def test_seeded_clients_are_reproducible_and_unseeded_ones_are_not():
    a, b = localdp.Client(GRR, seed=5), localdp.Client(GRR, seed=5)
    assert [a.randomize(7) for _ in range(50)] == [b.randomize(7) for _ in range(50)]
    c, d = localdp.Client(GRR), localdp.Client(GRR)
    assert [c.randomize(7) for _ in range(50)] != [d.randomize(7) for _ in range(50)]


def test_client_reports_are_the_cli_lines(cli, tmp_path):
    config = {"protocol": "olh", "epsilon": 1, "domain": 64}
    report = localdp.Client(config, seed=1).randomize(5)
    (tmp_path / "config.json").write_text(json.dumps(config))
    agg_line = cli("aggregate", "--config", tmp_path / "config.json", input=json.dumps(report).encode())
    assert json.loads(agg_line)["n"] == 1
    assert list(report) == ["version", "protocol", "epsilon", "domain", "seed", "value"]


def test_record_batch_reader_and_capsule_objects():
    client = localdp.Client(GRR, seed=1)
    values = pa.array([client.randomize(i % 10)["value"] for i in range(1000)], pa.uint64())
    table = pa.table({"id": pa.array([client.id] * 1000).dictionary_encode(), "value": values})
    expected = localdp.Aggregator(GRR)
    expected.add_arrow(table)

    class Capsules:
        """Only the PyCapsule interface, as a third-party library has it."""

        def __init__(self, data):
            self.data = data

        def __arrow_c_stream__(self, requested_schema=None):
            return self.data.__arrow_c_stream__(requested_schema)

    for data in [pa.RecordBatchReader.from_batches(table.schema, table.to_batches(100)), Capsules(table),
                 table.to_batches()[0], table.to_batches(300)]:
        agg = localdp.Aggregator(GRR)
        assert agg.add_arrow(data)["accepted"] == 1000
        assert agg.to_bytes() == expected.to_bytes()


def test_polars():
    pl = pytest.importorskip("polars")
    client = localdp.Client(GRR, seed=1)
    reports = [client.randomize(i % 10) for i in range(500)]
    frame = pl.DataFrame({"id": [client.id] * 500, "value": [r["value"] for r in reports]},
                         schema={"id": pl.Utf8, "value": pl.UInt64})
    agg, expected = localdp.Aggregator(GRR), localdp.Aggregator(GRR)
    assert agg.add_arrow(frame)["accepted"] == 500
    expected.add_many(reports)
    assert agg.to_bytes() == expected.to_bytes()


@pytest.mark.parametrize("config, value", [
    ({"protocol": "oue", "epsilon": 1, "domain": 20}, 3),  # bits: Polars' BinaryView
    ({"protocol": "duchi", "epsilon": 1, "range": [[0, 1], [0, 5]]}, [0.5, 2.0]),  # lists: Polars' LargeList
    ({"protocol": "hierarchical", "epsilon": 2, "range": [0, 1], "bins": 512}, 0.3),  # nullable columns
])
def test_polars_binary_and_list_columns(config, value, tmp_path):
    pl = pytest.importorskip("polars")
    import pyarrow.parquet as pq

    reports = [localdp.Client(config, seed=s).randomize(value) for s in range(300)]
    expected = localdp.Aggregator(config)
    expected.add_many(reports)
    # The columnar file of these reports, read by Polars.
    rows = {"id": [localdp.Client(config).id] * len(reports)}
    table = pa.table(rows)
    for column in ["value", "seed", "cohort", "attributes", "values"]:
        if any(column in r for r in reports):
            kind = {"seed": pa.uint32(), "cohort": pa.uint32(), "attributes": pa.list_(pa.uint32()),
                    "values": pa.list_(pa.uint64())}.get(column, pa.uint64())
            table = table.append_column(column, pa.array([r.get(column) for r in reports], kind))
    if any("bits" in r for r in reports):
        table = table.append_column("bits", pa.array([bytes.fromhex(r["bits"]) if "bits" in r else None
                                                      for r in reports], pa.binary()))
    pq.write_table(table, tmp_path / "reports.parquet")
    frame = pl.read_parquet(tmp_path / "reports.parquet")
    agg = localdp.Aggregator(config)
    assert agg.add_arrow(frame)["accepted"] == 300
    assert agg.to_bytes() == expected.to_bytes()


def test_to_pandas_per_family():
    frequency = localdp.Aggregator({"protocol": "oue", "epsilon": 2, "domain": ["a", "b", "c"]})
    client = localdp.Client({"protocol": "oue", "epsilon": 2, "domain": ["a", "b", "c"]}, seed=1)
    frequency.add_many([client.randomize("a") for _ in range(300)])
    frame = frequency.to_pandas(post="norm-sub")
    estimate = frequency.estimate(post="norm-sub")
    assert list(frame["value"]) == ["a", "b", "c"]
    assert list(frame["estimate"]) == [e["frequency"] for e in estimate["estimates"]]
    assert list(frame["ci95_low"]) == [e["ci95"][0] for e in estimate["estimates"]]
    assert frame.attrs["n"] == 300 and frame.attrs["post"] == "norm-sub"

    record = {"protocol": "duchi", "epsilon": 1, "range": [[0, 1], [0, 5]]}
    numeric = localdp.Aggregator(record)
    numeric.add_many([localdp.Client(record, seed=s).randomize([0.5, 2]) for s in range(100)])
    frame = numeric.to_pandas()
    assert list(frame["attribute"]) == [0, 1]
    assert list(frame["std_error"]) == [a["std_error"] for a in numeric.estimate()["attributes"]]

    dist = {"protocol": "square_wave", "epsilon": 1, "range": [0, 1], "bins": 8}
    distribution = localdp.Aggregator(dist)
    distribution.add_many([localdp.Client(dist, seed=s).randomize(0.3) for s in range(100)])
    frame = distribution.to_pandas()
    assert len(frame) == 8 and list(frame.columns[:2]) == ["lo", "hi"]
    assert (frame["ci95_low"] <= frame["estimate"]).all() and (frame["estimate"] <= frame["ci95_high"]).all()

    sketch = {"protocol": "cms", "epsilon": 2, "candidates": ["x", "y"]}
    candidates = localdp.Aggregator(sketch)
    candidates.add_many([localdp.Client(sketch, seed=s).randomize("x") for s in range(100)])
    assert list(candidates.to_pandas()["value"]) == ["x", "y"]


KEY_VALUE = {"protocol": "pckv_grr", "epsilon": 2, "keys": ["a", "b", "c"], "range": [0, 10], "pad": 2}
MARGINALS = {"protocol": "marginals_oue", "epsilon": 1,
             "attributes": [{"name": "a", "domain": 3}, {"name": "b", "domain": ["x", "y"]}, {"name": "c", "domain": 2}]}
STATS = ["estimate", "std_error", "ci95_low", "ci95_high"]


def test_to_pandas_key_value_is_a_long_frame_of_keys_and_stats():
    agg = localdp.Aggregator(KEY_VALUE)
    agg.add_many([localdp.Client(KEY_VALUE, seed=s).randomize({"a": 3, "b": 8}) for s in range(300)])
    frame, estimate = agg.to_pandas(), agg.estimate()
    assert list(frame.columns) == ["key", "stat", *STATS]
    assert list(frame["key"]) == ["a", "a", "b", "b", "c", "c"]
    assert list(frame["stat"]) == ["frequency", "mean"] * 3
    stats = [k[stat] for k in estimate["keys"] for stat in ("frequency", "mean")]
    assert list(frame["estimate"]) == [s["estimate"] for s in stats]
    assert list(frame["std_error"]) == [s["se"] for s in stats]
    assert list(frame["ci95_high"]) == [s["ci95"][1] for s in stats]
    assert frame.attrs["n"] == 300 and "keys" not in frame.attrs


def test_to_pandas_marginals_has_a_row_per_cell_and_a_column_per_attribute():
    agg = localdp.Aggregator(MARGINALS)
    agg.add_many([localdp.Client(MARGINALS, seed=s).randomize({"a": s % 3, "b": "x", "c": 1}) for s in range(300)])
    frame, estimate = agg.to_pandas(), agg.estimate()
    assert list(frame.columns) == ["marginal", "a", "b", "c", *STATS]
    cells = [(m, c) for m in estimate["marginals"] for c in m["cells"]]
    assert len(frame) == len(cells) > 0
    for (_, row), (marginal, cell) in zip(frame.iterrows(), cells):
        assert row["marginal"] == " x ".join(marginal["attributes"])
        for name in ["a", "b", "c"]:
            expected = cell["values"][marginal["attributes"].index(name)] if name in marginal["attributes"] else None
            assert row[name] == expected
        assert [row[s] for s in STATS] == [cell["frequency"], cell["se"], *cell["ci95"]]
    histograms = agg.to_pandas(frame="histograms")
    assert list(histograms.columns) == ["attribute", "value", *STATS]
    assert list(histograms["attribute"]) == ["a"] * 3 + ["b"] * 2 + ["c"] * 2
    with pytest.raises(localdp.ConfigError) as raised:
        agg.to_pandas(frame="quantiles")
    assert raised.value.parameter == "frame"


def test_to_pandas_quantiles_of_a_distribution():
    dist = {"protocol": "square_wave", "epsilon": 1, "range": [0, 1], "bins": 8}
    agg = localdp.Aggregator(dist)
    agg.add_many([localdp.Client(dist, seed=s).randomize(s / 300) for s in range(300)])
    frame = agg.to_pandas(quantiles=[0.25, 0.5, 0.9], frame="quantiles")
    quantiles = agg.estimate(quantiles=[0.25, 0.5, 0.9])["quantiles"]
    assert list(frame.columns) == ["q", *STATS]
    assert list(frame["q"]) == [0.25, 0.5, 0.9]
    assert list(frame["estimate"]) == [q["value"] for q in quantiles]
    assert list(frame["ci95_low"]) == [q["ci95"][0] for q in quantiles]
    assert frame["std_error"].isna().all()
    assert len(agg.to_pandas()) == 8


def public_objects():
    """Every public name, and every public method and property of the classes."""
    for name in localdp.__all__:
        obj = getattr(localdp, name)
        yield name, obj
        if name in ("Aggregator", "Client"):
            for member in vars(obj):
                if not member.startswith("_"):
                    yield f"{name}.{member}", getattr(obj, member)


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=[n for n, _ in public_objects()])
def test_docstring_has_a_passing_example(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    test = doctest.DocTestParser().get_doctest(doc, {}, name, None, 0)
    assert test.examples, f"{name}'s docstring has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_help_reads_well():
    text = pydoc_text(localdp.Aggregator)
    for method in ["add_arrow", "add_parquet", "estimate", "to_pandas", "from_bytes", "merge"]:
        assert method in text
    assert "Aggregator(config)" in text


def pydoc_text(obj):
    import pydoc

    return pydoc.plain(pydoc.render_doc(obj))


def test_the_example_runs_and_draws_its_plot(tmp_path):
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "python_collection.py"
    out = tmp_path / "plot.png"
    printed = subprocess.run([sys.executable, example, out], check=True, capture_output=True, text=True).stdout
    assert out.read_bytes().startswith(b"\x89PNG")
    assert "true shares inside their 95% interval" in printed


def test_duckdb_query_results(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.parquet as pq

    config = {"protocol": "olh", "epsilon": 1, "domain": 64}
    reports = [localdp.Client(config, seed=s).randomize(s % 5) for s in range(400)]
    table = pa.table({"id": pa.array([localdp.Client(config).id] * 400).dictionary_encode(),
                      "value": pa.array([r["value"] for r in reports], pa.uint64()),
                      "seed": pa.array([r["seed"] for r in reports], pa.uint32())})
    pq.write_table(table, tmp_path / "reports.parquet")
    expected = localdp.Aggregator(config)
    expected.add_many(reports)
    # A query's result, straight from DuckDB (its Arrow stream).
    result = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'reports.parquet'}') WHERE seed IS NOT NULL")
    agg = localdp.Aggregator(config)
    assert agg.add_arrow(result)["accepted"] == 400
    assert agg.to_bytes() == expected.to_bytes()
