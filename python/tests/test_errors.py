"""Bad input: counted by reason or raised as a typed localdp error; never a
crash, and a panic in Rust is localdp.Error."""

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import localdp

GRR = {"protocol": "grr", "epsilon": 1, "domain": 1024}
OUE = {"protocol": "oue", "epsilon": 1, "domain": 20}
ZERO = {"malformed": 0, "unsupported_version": 0, "config_mismatch": 0, "out_of_range": 0, "bad_length": 0,
        "bad_subset_size": 0}


def counts(**nonzero):
    return {**ZERO, **nonzero}


def ids(config, rows):
    return pa.array([localdp.Client(config).id] * rows).dictionary_encode()


def test_every_error_is_a_localdp_error():
    for name in localdp.__all__:
        cls = getattr(localdp, name)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            assert issubclass(cls, localdp.Error) and issubclass(cls, Exception), name


@pytest.mark.parametrize("config, key, parameter", [
    ({"protocol": "grr", "epsilon": 1}, "domain", "domain"),
    ({"protocol": "grr", "epsilon": 1, "domain": 4, "extra": 1}, "extra", "extra"),
    ({"protocol": "grr", "epsilon": 0, "domain": 4}, None, "epsilon"),
    ({"protocol": "nope", "epsilon": 1, "domain": 4}, "protocol", "protocol"),
    ("not a dict", None, None),
    ({"protocol": "grr", "epsilon": math.nan, "domain": 4}, None, None),
])
def test_config_errors(config, key, parameter):
    with pytest.raises(localdp.ConfigError) as raised:
        localdp.Aggregator(config)
    assert isinstance(raised.value, ValueError)
    assert raised.value.key == key and raised.value.parameter == parameter
    with pytest.raises(localdp.ConfigError):
        localdp.Client(config)


def test_rejected_reports_are_counted_and_raised_with_their_reason():
    agg = localdp.Aggregator(GRR)
    good = localdp.Client(GRR, seed=1).randomize(3)
    cases = [
        ("not json", "malformed"),
        (b"\xff\xfe", "malformed"),
        ({"a": {1, 2}}, "malformed"),  # not JSON at all
        (42, "malformed"),
        ({**good, "value": math.nan}, "malformed"),
        ({**good, "version": 2}, "unsupported_version"),
        ({**good, "epsilon": 2}, "config_mismatch"),
        ({**good, "value": 1024}, "out_of_range"),
        ({**good, "value": -1}, "malformed"),
        ({**good, "value": 2 ** 64}, "malformed"),
    ]
    for report, reason in cases:
        with pytest.raises(localdp.Rejected) as raised:
            agg.add(report)
        assert raised.value.reason == reason, report
    agg.add(good)
    agg.add(json.dumps(good))
    assert agg.n == 2
    expected = {}
    for _, reason in cases:
        expected[reason] = expected.get(reason, 0) + 1
    assert agg.rejected == counts(**expected)
    assert agg.estimate()["rejected"] == agg.rejected


def test_add_many_counts_never_raises():
    agg = localdp.Aggregator(OUE)
    client = localdp.Client(OUE, seed=2)
    result = agg.add_many(iter([client.randomize(1), {"version": 1}, None, client.randomize(2), "{"]))
    assert result == {"accepted": 2, "rejected": counts(malformed=3)}
    with pytest.raises(TypeError):
        agg.add_many(5)


def test_arrow_rows_are_counted_by_reason():
    agg = localdp.Aggregator(GRR)
    # An int64 value column (a dataframe's) is read as the schema's UInt64; a negative value is malformed.
    table = pa.table({"id": ids(GRR, 3), "value": pa.array([1, -2, 3], pa.int64())})
    assert agg.add_arrow(table) == {"accepted": 2, "rejected": counts(malformed=1)}
    # A null id; another config's id.
    table = pa.table({"id": pa.array([None, localdp.Client(GRR).id, "grr:2.0:c24f8ea73c4690e4"]),
                      "value": pa.array([1, 2, 3], pa.uint64())})
    assert agg.add_arrow(table) == {"accepted": 1, "rejected": counts(malformed=1, config_mismatch=1)}
    # A null value; bits of the wrong width (OUE).
    table = pa.table({"id": ids(GRR, 2), "value": pa.array([None, 7], pa.uint64())})
    assert agg.add_arrow(table) == {"accepted": 1, "rejected": counts(malformed=1)}
    oue = localdp.Aggregator(OUE)
    table = pa.table({"id": ids(OUE, 2), "bits": pa.array([b"\x01\x00\x00", b"\x01\x00\x00\x00"], pa.binary())})
    assert oue.add_arrow(table) == {"accepted": 1, "rejected": counts(bad_length=1)}
    # An empty table adds nothing.
    assert agg.add_arrow(table.slice(0, 0))["accepted"] == 0


def test_arrow_input_that_is_not_arrow_is_a_type_error():
    agg = localdp.Aggregator(GRR)
    for data in [5, "table", {"id": [1]}, [5]]:
        with pytest.raises(TypeError):
            agg.add_arrow(data)
    assert agg.n == 0 and sum(agg.rejected.values()) == 0


def test_files_that_cannot_be_read(tmp_path):
    agg = localdp.Aggregator(GRR)
    with pytest.raises(FileNotFoundError):
        agg.add_parquet(tmp_path / "missing.parquet")
    with pytest.raises(FileNotFoundError):
        agg.add_json_lines(tmp_path / "missing.jsonl")
    damaged = tmp_path / "damaged.parquet"
    table = pa.table({"id": ids(GRR, 1000), "value": pa.array(range(1000), pa.uint64())})
    pq.write_table(table, damaged)
    data = bytearray(damaged.read_bytes())
    for i in range(100, 400):  # the column chunks' bytes
        data[i] ^= 0x5A
    damaged.write_bytes(bytes(data))
    try:
        agg.add_parquet(damaged)
    except localdp.ReadError:
        pass
    # Whatever was read, the aggregator is still usable.
    agg.add(localdp.Client(GRR, seed=1).randomize(1))
    assert agg.n >= 1


def test_client_values():
    with pytest.raises(localdp.ValueNotInDomain):
        localdp.Client(GRR).randomize(1024)
    with pytest.raises(localdp.ValueNotInDomain):
        localdp.Client(GRR).randomize(-1)
    with pytest.raises(TypeError):
        localdp.Client(GRR).randomize(1.5)
    with pytest.raises(TypeError):
        localdp.Client(GRR).randomize(True)
    numeric = localdp.Client({"protocol": "laplace", "epsilon": 1, "range": [0, 1]})
    with pytest.raises(localdp.InvalidValue):
        numeric.randomize(math.inf)
    with pytest.raises(TypeError):
        numeric.randomize("0.5")
    with pytest.raises(TypeError):
        localdp.Client({"protocol": "cms", "epsilon": 1}).randomize(3)


def test_budget_exceeded():
    client = localdp.Client({**GRR, "budget": {"epsilon": 2.5, "window": "1d"}}, seed=1)
    client.randomize(1)
    client.randomize(1)
    with pytest.raises(localdp.PrivacyBudgetExceeded) as raised:
        client.randomize(1)
    assert (raised.value.cost, raised.value.spent, raised.value.budget) == (1.0, 2.0, 2.5)


def test_merge_and_state_errors():
    agg = localdp.Aggregator(GRR)
    with pytest.raises(localdp.MergeMismatch):
        agg.merge(localdp.Aggregator(OUE))
    state = agg.to_bytes()
    with pytest.raises(localdp.StateError):
        localdp.Aggregator.from_bytes(OUE, state)
    with pytest.raises(localdp.StateError):
        localdp.Aggregator.from_bytes(GRR, state[:-1])
    with pytest.raises(localdp.NoReports):
        agg.estimate()
    with pytest.raises(localdp.ConfigError) as raised:
        agg.estimate(post="sideways")
    assert raised.value.parameter == "post"
    agg.add(localdp.Client(GRR, seed=1).randomize(1))
    with pytest.raises(localdp.ConfigError):
        agg.estimate(quantiles=[0.5])
    # Merging an aggregator into itself is refused (test_readers.py).


def test_a_panic_is_a_localdp_error():
    from localdp import _localdp

    with pytest.raises(localdp.Error, match="internal error"):
        _localdp._panic_for_tests()
