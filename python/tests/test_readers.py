"""The analyst's first hour: every way an export is loaded (pandas, Polars,
DuckDB, pyarrow, hive-partitioned scans, add_parquet of a folder, a glob, a
list) gives the collector's estimate with no cast written by the user, and
every wrong input raises a typed error that names its cause, before
anything is counted."""

import copy
import gzip
import json
import pickle

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import localdp

# One metric of each payload shape: an index, a seed and a value, bits,
# sampled lists.
CONFIGS = {
    "grr": ({"protocol": "grr", "epsilon": 2, "domain": ["chrome", "safari", "edge"]}, ["chrome", "chrome", "edge"]),
    "olh": ({"protocol": "olh", "epsilon": 1, "domain": 64}, ["1", "5", "5", "9"]),
    "oue": ({"protocol": "oue", "epsilon": 1, "domain": 20}, ["3", "3", "17"]),
    "laplace": ({"protocol": "laplace", "epsilon": 1, "range": [[0, 1], [0, 5], [2, 3]]}, ["0.5,1,2.5", "1,5,3"]),
}


def export(cli, folder, config, values):
    """Two days of reports of `config` as the collector exports them, in
    hive partitions (reports/day=1/, reports/day=2/); the CLI's estimate of
    both days' lines."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "values").write_text("\n".join(values * 100) + "\n")
    lines = []
    for day in (1, 2):
        jsonl = folder / f"day{day}.jsonl"
        jsonl.write_bytes(cli("randomize", "--config", folder / "config.json", "--seed", day, folder / "values"))
        (folder / "reports" / f"day={day}").mkdir(parents=True)
        cli("export", "--config", folder / "config.json", "--format", "parquet",
            "-o", folder / "reports" / f"day={day}" / "part-0.parquet", jsonl)
        lines.append(jsonl)
    return json.loads(cli("aggregate", "--config", folder / "config.json", "--format", "json", *lines))


@pytest.fixture(scope="module", params=list(CONFIGS))
def exported(request, cli, tmp_path_factory):
    config, values = CONFIGS[request.param]
    folder = tmp_path_factory.mktemp(request.param) / "export"
    return config, folder / "reports", export(cli, folder, config, values)


# Each loading path as the analyst writes it, with no cast.
LOADS = {
    "pyarrow read_table": lambda reports: [pq.read_table(p) for p in sorted(reports.glob("*/*.parquet"))],
    "pyarrow dataset (hive)": lambda reports: ds.dataset(reports, partitioning="hive").to_table(),
    "pandas read_parquet": lambda reports: [pd.read_parquet(p) for p in sorted(reports.glob("*/*.parquet"))],
    "pandas read_parquet (hive)": lambda reports: pd.read_parquet(reports),
    "polars read_parquet": lambda reports: [pl.read_parquet(p) for p in sorted(reports.glob("*/*.parquet"))],
    "polars scan_parquet (hive)": lambda reports: pl.scan_parquet(reports / "**" / "*.parquet", hive_partitioning=True).collect(),
    "polars Enum id": lambda reports: [
        frame.with_columns(pl.col("id").cast(pl.Enum(frame["id"].unique().cast(pl.String).to_list())))
        for frame in (pl.read_parquet(p) for p in sorted(reports.glob("*/*.parquet")))],
    "duckdb (hive)": lambda reports: duckdb.sql(
        f"SELECT * FROM read_parquet('{reports}/*/*.parquet', hive_partitioning = true)").arrow(),
}


@pytest.mark.parametrize("load", list(LOADS))
def test_every_loading_path_gives_the_collectors_estimate(exported, load):
    config, reports, expected = exported
    agg = localdp.Aggregator(config)
    result = agg.add_arrow(LOADS[load](reports))
    assert result["accepted"] == expected["n"] and sum(result["rejected"].values()) == 0, result
    assert json.dumps(agg.estimate()) == json.dumps(expected)


@pytest.mark.parametrize("paths", ["folder", "glob", "list", "files one by one"])
def test_add_parquet_takes_a_folder_a_glob_and_a_list(exported, paths):
    config, reports, expected = exported
    files = sorted(reports.glob("*/*.parquet"))
    agg = localdp.Aggregator(config)
    if paths == "folder":
        agg.add_parquet(reports)
    elif paths == "glob":
        agg.add_parquet(str(reports / "day=*" / "*.parquet"))
    elif paths == "list":
        agg.add_parquet([str(files[0]), files[1]])
    else:
        for file in files:
            agg.add_parquet(file)
    assert json.dumps(agg.estimate()) == json.dumps(expected)
    assert json.dumps(localdp.Aggregator.from_parquet(reports).estimate()) == json.dumps(expected)


def test_dataframe_number_types_are_read_and_only_bad_values_are_malformed():
    config = {"protocol": "olh", "epsilon": 1, "domain": 64}
    client = localdp.Client(config, seed=3)
    reports = [client.randomize(i % 7) for i in range(200)]
    expected = localdp.Aggregator(config)
    expected.add_many(reports)
    frame = pd.DataFrame({"id": pd.Categorical([client.id] * 200), "value": [r["value"] for r in reports],
                          "seed": [r["seed"] for r in reports]})
    for value, seed in [("int64", "int64"), ("int32", "uint64"), ("uint8", "int64"), ("float64", "float64")]:
        agg = localdp.Aggregator(config)
        assert agg.add_arrow(frame.astype({"value": value, "seed": seed}))["accepted"] == 200, (value, seed)
        assert agg.to_bytes() == expected.to_bytes()
    # A null makes pandas' column float64; a fractional or negative value: that row alone.
    bad = frame.astype({"value": "float64"})
    bad.loc[0, "value"], bad.loc[1, "value"], bad.loc[2, "seed"] = None, 1.5, -1
    agg = localdp.Aggregator(config)
    result = agg.add_arrow(bad)
    assert result["accepted"] == 197 and result["rejected"]["malformed"] == 3
    assert [r["row"] for r in agg.rejections()] == [0, 1, 2]


def test_a_column_that_cannot_be_used_raises_schema_error_before_anything_is_counted():
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    client = localdp.Client(config, seed=1)
    good = pa.table({"id": pa.array([client.id] * 3), "value": pa.array([1, 2, 3], pa.uint64())})
    text = pa.table({"id": pa.array([client.id] * 2), "value": pa.array(["1", "2"])})
    agg = localdp.Aggregator(config)
    with pytest.raises(localdp.SchemaError) as raised:
        agg.add_arrow([good, text])
    error = raised.value
    assert (error.column, error.found) == ("value", "Utf8") and "whole numbers" in error.expected
    assert str(error).startswith('column "value" is Utf8, expected whole numbers')
    assert isinstance(error, TypeError)
    with pytest.raises(localdp.SchemaError, match='no "id" column') as raised:
        agg.add_arrow(pa.table({"value": pa.array([1], pa.uint64())}))
    assert raised.value.column == "id" and raised.value.found is None
    # Nothing of either call was counted, the good table included.
    assert agg.n == 0 and sum(agg.rejected.values()) == 0


def test_a_file_with_a_column_that_cannot_be_used_names_the_file(tmp_path):
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    client = localdp.Client(config, seed=1)
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [client.id], "value": pa.array([1], pa.uint64())}), good)
    pq.write_table(pa.table({"id": [client.id], "value": [b"x"]}), bad)
    agg = localdp.Aggregator(config)
    with pytest.raises(localdp.SchemaError, match="bad.parquet: column \"value\" is Binary"):
        agg.add_parquet([good, bad])
    assert agg.n == 0


def test_a_file_that_fails_midway_counts_nothing_of_the_call(tmp_path):
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    client = localdp.Client(config, seed=1)
    table = pa.table({"id": [client.id] * 4, "value": pa.array([1, 2, 3, 9], pa.uint64())})
    good, broken = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(table, good)
    # Two row groups; the second one's pages zeroed (its footer intact, so
    # the file opens and its first row group is read before the failure).
    pq.write_table(table, broken, row_group_size=2)
    data = bytearray(broken.read_bytes())
    second = pq.ParquetFile(broken).metadata.row_group(1).column(0)
    start = min(o for o in (second.dictionary_page_offset, second.data_page_offset) if o is not None)
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[start:footer] = bytes(footer - start)
    broken.write_bytes(bytes(data))
    agg = localdp.Aggregator(config)
    with pytest.raises(localdp.ReadError, match=r"b\.parquet: .*; nothing was counted"):
        agg.add_parquet([good, broken])
    assert agg.n == 0 and sum(agg.rejected.values()) == 0 and agg.rejections() == []
    # Still usable, and a later call counts as usual.
    assert agg.add_parquet(good) == {"accepted": 3, "rejected": {**{r: 0 for r in agg.rejected}, "out_of_range": 1}}


def test_from_parquet_of_no_file_raises_file_not_found():
    for paths in [[], ()]:
        with pytest.raises(FileNotFoundError, match="no Parquet file"):
            localdp.Aggregator.from_parquet(paths)


def test_a_folder_with_a_link_to_itself_is_read_once(tmp_path):
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    table = pa.table({"id": [localdp.Client(config).id] * 2, "value": pa.array([1, 3], pa.uint64())})
    table = table.replace_schema_metadata({"localdp.config": json.dumps(config)})
    (tmp_path / "reports" / "day=1").mkdir(parents=True)
    pq.write_table(table, tmp_path / "reports" / "day=1" / "part-0.parquet")
    (tmp_path / "reports" / "day=1" / "loop").symlink_to(tmp_path / "reports", target_is_directory=True)
    assert localdp.Aggregator(config).add_parquet(tmp_path / "reports")["accepted"] == 2
    assert localdp.Aggregator.from_parquet(tmp_path / "reports").n == 2


def test_add_many_refuses_text_and_add_json_lines_refuses_binary_files(tmp_path):
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    line = json.dumps(localdp.Client(config, seed=1).randomize(1))
    agg = localdp.Aggregator(config)
    for text in [line + "\n" + line, (line + "\n").encode(), bytearray(line.encode())]:
        with pytest.raises(TypeError, match="not one str or bytes"):
            agg.add_many(text)
    parquet = tmp_path / "reports.parquet"
    pq.write_table(pa.table({"id": [localdp.Client(config).id], "value": pa.array([1], pa.uint64())}), parquet)
    with pytest.raises(localdp.ReadError, match="is not JSON Lines text: it is a Parquet file"):
        agg.add_json_lines(parquet)
    gz = tmp_path / "reports.jsonl.gz"
    gz.write_bytes(gzip.compress((line + "\n").encode()))
    with pytest.raises(localdp.ReadError, match="gzip"):
        agg.add_json_lines(gz)
    nul = tmp_path / "nul.jsonl"
    nul.write_bytes(line.encode() + b"\n\x00\n")
    with pytest.raises(localdp.ReadError, match="NUL"):
        agg.add_json_lines(nul)
    assert agg.n == 0 and sum(agg.rejected.values()) == 0
    assert agg.add_many(line.splitlines())["accepted"] == 1


def test_merging_an_aggregator_into_itself_is_refused():
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    agg = localdp.Aggregator(config)
    agg.add_many([localdp.Client(config, seed=s).randomize(1) for s in range(5)])
    with pytest.raises(localdp.MergeMismatch, match="into itself"):
        agg.merge(agg)
    assert agg.n == 5
    twin = pickle.loads(pickle.dumps(agg))
    agg.merge(twin)
    assert agg.n == 10


def test_no_reports_names_the_main_reason_and_the_files_config(exported):
    config, reports, expected = exported
    other = {**config, "epsilon": config["epsilon"] * 2}
    agg = localdp.Aggregator(other)
    agg.add_parquet(reports)
    with pytest.raises(localdp.NoReports) as raised:
        agg.estimate()
    error = raised.value
    assert error.reason == "no_reports" and error.main_reason == "config_mismatch"
    assert error.file_config == config and error.rejected["config_mismatch"] == expected["n"]
    assert f"all {expected['n']} reports added were rejected, {expected['n']} of them as config_mismatch" in str(error)
    assert json.dumps(config) in str(error) and "Aggregator.from_parquet" in str(error)
    assert agg.rejections(limit=3) == [{"source": str(sorted(reports.glob("*/*.parquet"))[0]), "row": row,
                                         "reason": "config_mismatch"} for row in range(3)]


def test_rejections_list_the_first_refused_rows_and_lines(tmp_path):
    config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    client = localdp.Client(config, seed=1)
    lines = [json.dumps(client.randomize(1)) for _ in range(10)]
    lines[2], lines[7] = "not json", json.dumps({**json.loads(lines[7]), "value": 9})
    path = tmp_path / "reports.jsonl"
    path.write_text("\n".join(lines[:5] + [""] + lines[5:]) + "\n")
    agg = localdp.Aggregator(config)
    agg.add_json_lines(path)
    table = pa.table({"id": [client.id] * 5000, "value": pa.array([1] * 4990 + [7] * 10, pa.uint64())})
    agg.add_arrow(table)
    rejections = agg.rejections(limit=100)
    assert rejections[:2] == [{"source": str(path), "row": 2, "reason": "malformed"},
                              {"source": str(path), "row": 8, "reason": "out_of_range"}]
    assert rejections[2:] == [{"source": "add_arrow", "row": r, "reason": "out_of_range"} for r in range(4990, 5000)]
    assert agg.rejections() == rejections[:10]
    assert all(set(r) == {"source", "row", "reason"} for r in rejections)


def test_an_aggregator_pickles_through_its_state_bytes():
    config = {"protocol": "oue", "epsilon": 1, "domain": 8}
    agg = localdp.Aggregator(config)
    agg.add_many([localdp.Client(config, seed=s).randomize(s % 8) for s in range(300)] + ["not json"])
    for copied in [pickle.loads(pickle.dumps(agg)), copy.deepcopy(agg), copy.copy(agg)]:
        assert copied.to_bytes() == agg.to_bytes()
        assert json.dumps(copied.estimate()) == json.dumps(agg.estimate())
    assert pickle.loads(pickle.dumps(agg)) is not agg


@pytest.mark.parametrize("codec", ["snappy", "gzip", "lz4", "brotli", "zstd", "none"])
def test_parquet_of_every_codec_pyarrow_writes(tmp_path, codec):
    config = {"protocol": "olh", "epsilon": 1, "domain": 64}
    reports = [localdp.Client(config, seed=s).randomize(s % 9) for s in range(300)]
    expected = localdp.Aggregator(config)
    expected.add_many(reports)
    frame = pd.DataFrame({"id": [localdp.Client(config).id] * 300, "value": [r["value"] for r in reports],
                          "seed": [r["seed"] for r in reports]})
    frame.to_parquet(tmp_path / "reports.parquet", compression=codec)
    agg = localdp.Aggregator(config)
    agg.add_parquet(tmp_path / "reports.parquet")
    assert agg.to_bytes() == expected.to_bytes()
