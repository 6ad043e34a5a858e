"""Estimates from Python are bit-identical to the CLI's on the same reports,
for every family and every way in: dicts, JSON Lines files, Parquet files,
Arrow tables, state bytes and merges."""

import json
import random

import pyarrow.parquet as pq
import pytest

import localdp

# One config per family and payload shape (docs/COLUMNAR.md), and how to
# draw a value of it.
LABELS = [f"page-{i}" for i in range(12)]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
FAMILIES = {
    "grr": ({"protocol": "grr", "epsilon": 1, "domain": 16}, lambda r: str(min(int(r.expovariate(0.3)), 15))),
    "oue-labels": ({"protocol": "oue", "epsilon": 2, "domain": LABELS}, lambda r: r.choice(LABELS[:5])),
    "olh": ({"protocol": "olh", "epsilon": 1, "domain": 64}, lambda r: str(r.randrange(8))),
    "hr": ({"protocol": "hr", "epsilon": 1, "domain": 32}, lambda r: str(r.randrange(4))),
    "ss": ({"protocol": "ss", "epsilon": 1, "domain": 20}, lambda r: str(r.randrange(6))),
    "dbitflip": ({"protocol": "dbitflip", "epsilon": 1, "domain": 12, "d": 3}, lambda r: str(r.randrange(12))),
    "piecewise": ({"protocol": "piecewise", "epsilon": 2, "range": [0, 10]}, lambda r: str(r.uniform(2, 6))),
    "record": ({"protocol": "duchi", "epsilon": 1, "range": [[0, 1], [0, 5]]},
               lambda r: f"{r.random()},{r.uniform(1, 2)}"),
    "rappor": ({"protocol": "rappor", "cohorts": 8, "candidates": WORDS}, lambda r: r.choice(WORDS[:3])),
    "cms": ({"protocol": "cms", "epsilon": 2, "candidates": WORDS}, lambda r: r.choice(WORDS[:3])),
    "pem": ({"protocol": "pem", "epsilon": 4, "max_length": 6, "top": 5}, lambda r: r.choice(WORDS[:2])),
    "square_wave": ({"protocol": "square_wave", "epsilon": 1, "range": [0, 100], "bins": 16},
                    lambda r: str(r.gauss(40, 10))),
    # Above 256 bins the fine levels are HRR and the coarse OUE: nullable
    # columns and Binary bits.
    "hierarchical": ({"protocol": "hierarchical", "epsilon": 2, "range": [0, 1], "bins": 512},
                     lambda r: str(r.betavariate(2, 5))),
}
USERS = 3000
# Lines the CLI and Python both count as rejected, by several reasons.
BAD_LINES = ["not json", "[1, 2]", '{"version": 9, "protocol": "grr"}', '{"version": 1}']


def dumps(estimate):
    """The estimate's exact text: key order and every float's digits."""
    return json.dumps(estimate)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def collection(request, cli, tmp_path_factory):
    """A simulated collection of one family: the files, the CLI's estimates."""
    name = request.param
    config, draw = FAMILIES[name]
    work = tmp_path_factory.mktemp(name)
    rng = random.Random(name)
    (work / "config.json").write_text(json.dumps(config))
    (work / "values").write_text("\n".join(draw(rng) for _ in range(USERS)) + "\n")
    reports = work / "reports.jsonl"
    reports.write_bytes(cli("randomize", "--config", work / "config.json", "--seed", "7", work / "values"))
    bad = work / "bad.jsonl"
    bad.write_text("\n".join(BAD_LINES) + "\n")
    everything = work / "all.jsonl"
    everything.write_text(reports.read_text() + bad.read_text())
    parquet = work / "reports.parquet"
    cli("export", "--config", work / "config.json", "--format", "parquet", "--row-group-size", "1000",
        "-o", parquet, everything)
    aggregate = lambda *files: json.loads(cli("aggregate", "--config", work / "config.json", "--format", "json", *files))
    return {
        "config": config, "reports": reports, "all": everything, "parquet": parquet,
        "cli_good": aggregate(reports), "cli_all": aggregate(everything), "cli_parquet": aggregate(parquet),
        "cli": cli, "work": work,
    }


def test_the_cli_reads_its_parquet_export_as_the_lines(collection):
    assert dumps(collection["cli_parquet"]) == dumps(collection["cli_all"])


def test_json_lines_file(collection):
    agg = localdp.Aggregator(collection["config"])
    agg.add_json_lines(collection["all"])
    assert dumps(agg.estimate()) == dumps(collection["cli_all"])


def test_dicts_and_lines(collection):
    agg = localdp.Aggregator(collection["config"])
    lines = collection["all"].read_text().splitlines()
    # Good reports as dicts, the bad ones as the lines they are.
    items = [json.loads(line) if line.startswith('{"version":1,') else line for line in lines]
    result = agg.add_many(items)
    assert result["accepted"] + sum(result["rejected"].values()) == len(lines)
    assert dumps(agg.estimate()) == dumps(collection["cli_all"])


def test_parquet_file(collection):
    agg = localdp.Aggregator(collection["config"])
    result = agg.add_parquet(collection["parquet"])
    assert sum(result["rejected"].values()) == len(BAD_LINES)
    assert dumps(agg.estimate()) == dumps(collection["cli_all"])


def test_arrow_table_and_batches(collection):
    table = pq.read_table(collection["parquet"])
    agg = localdp.Aggregator(collection["config"])
    assert agg.add_arrow(table)["accepted"] == USERS
    # The table holds the accepted reports only (the file's footer counts
    # the rejected): the CLI's estimate of the good lines.
    assert dumps(agg.estimate()) == dumps(collection["cli_good"])
    batches = localdp.Aggregator(collection["config"])
    batches.add_arrow(table.to_batches(max_chunksize=700))
    assert dumps(batches.estimate()) == dumps(collection["cli_good"])


def test_state_bytes_and_merge(collection):
    config = collection["config"]
    lines = collection["all"].read_text().splitlines()
    first, second = localdp.Aggregator(config), localdp.Aggregator(config)
    first.add_many(lines[: len(lines) // 3])
    second.add_many(lines[len(lines) // 3:])
    restored = localdp.Aggregator.from_bytes(config, first.to_bytes())
    restored.merge(localdp.Aggregator.from_bytes(config, second.to_bytes()))
    assert restored.to_bytes() == localdp.Aggregator.from_bytes(config, restored.to_bytes()).to_bytes()
    assert dumps(restored.estimate()) == dumps(collection["cli_all"])


@pytest.mark.parametrize("post", ["norm-sub", "project"])
def test_post_processing(cli, tmp_path, post):
    config, draw = FAMILIES["grr"]
    rng = random.Random(post)
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "values").write_text("\n".join(draw(rng) for _ in range(500)))
    reports = tmp_path / "reports.jsonl"
    reports.write_bytes(cli("randomize", "--config", tmp_path / "config.json", "--seed", "3", tmp_path / "values"))
    expected = json.loads(cli("aggregate", "--config", tmp_path / "config.json", "--post", post, reports))
    agg = localdp.Aggregator(config)
    agg.add_json_lines(reports)
    assert dumps(agg.estimate(post=post)) == dumps(expected)


@pytest.mark.parametrize("collection", ["square_wave", "hierarchical"], indirect=True)
def test_quantiles(cli, collection):
    work = collection["work"]
    expected = json.loads(cli("aggregate", "--config", work / "config.json", "--quantiles", "0.1,0.5,0.75",
                              collection["reports"]))
    agg = localdp.Aggregator(collection["config"])
    agg.add_json_lines(collection["reports"])
    assert dumps(agg.estimate(quantiles=[0.1, 0.5, 0.75])) == dumps(expected)
