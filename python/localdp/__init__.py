"""localdp: local differential privacy for telemetry, from Python.

Each value is randomized on the user's device before it is sent
(``Client``); the aggregator (``Aggregator``) debiases the collected
reports into estimates with honest error bars. It reads reports as dicts,
JSON Lines and Parquet files, and any Arrow data (pyarrow, Polars, DuckDB)
without copying, and gives the same numbers as ``localdp aggregate``.

>>> import localdp
>>> config = {"protocol": "oue", "epsilon": 1, "domain": 4}
>>> agg = localdp.Aggregator(config)
>>> _ = agg.add_many([localdp.Client(config, seed=s).randomize(s % 4) for s in range(400)])
>>> agg.n
400
"""

from ._errors import (
    ConfigError,
    Error,
    InvalidValue,
    MergeMismatch,
    NoReports,
    PrivacyBudgetExceeded,
    ReadError,
    Rejected,
    SchemaError,
    StateError,
    ValueNotInDomain,
)
from ._localdp import Aggregator, Client

__all__ = [
    "Aggregator",
    "Client",
    "ConfigError",
    "Error",
    "InvalidValue",
    "MergeMismatch",
    "NoReports",
    "PrivacyBudgetExceeded",
    "ReadError",
    "Rejected",
    "SchemaError",
    "StateError",
    "ValueNotInDomain",
]
