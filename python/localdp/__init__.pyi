"""Type stubs of localdp (the extension localdp._localdp and the exceptions).
Names with a leading underscore are the stub's own aliases, not in the module."""

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Optional, TypedDict, Union, final

# The module's __all__ (localdp/__init__.py), as stubtest checks.
__all__ = ["Aggregator", "Client", "ConfigError", "Error", "InvalidValue", "MergeMismatch", "NoReports",
           "PrivacyBudgetExceeded", "ReadError", "Rejected", "SchemaError", "StateError", "ValueNotInDomain"]

_Config = Mapping[str, Any]
"""A metric's config: the same JSON as the CLI's CONFIG.json."""
_Report = dict[str, Any]
"""One report: the same object as a line of `localdp randomize`."""
_Estimate = dict[str, Any]
"""The same object as `localdp aggregate --format json` prints."""
_RejectionReason = Literal["malformed", "unsupported_version", "config_mismatch", "out_of_range", "bad_length", "bad_subset_size"]
_PostProcessing = Literal["none", "norm-sub", "project"]
_Frame = Literal["histogram", "quantiles", "marginals", "histograms"]
_Path = Union[str, PathLike[str]]
_Paths = Union[_Path, Sequence[_Path]]
"""A Parquet file, a directory, a glob pattern, or a list of them."""
_Value = Union[str, int, float, Sequence[float], Mapping[str, Any]]
"""A value to randomize: a label or index, a number, a record, a dict of
keys (key-value) or of attributes (marginals)."""

class _Added(TypedDict):
    """What an `add_*` call accepted and rejected."""

    accepted: int
    rejected: dict[_RejectionReason, int]

class _Rejection(TypedDict):
    """A refused row or line: where it was and why."""

    source: str
    row: int
    reason: _RejectionReason

@final
class Aggregator:
    """The aggregator of one metric: validates and counts reports, merges,
    saves and estimates; bad reports are counted by reason."""

    def __new__(cls, config: _Config) -> Aggregator: ...
    @staticmethod
    def from_bytes(config: _Config, state: bytes) -> Aggregator:
        """The aggregator whose state `to_bytes` gave, for the same config."""
    @staticmethod
    def from_parquet(path: _Paths) -> Aggregator:
        """The aggregator of a Parquet export's own config, with its reports."""
    @property
    def protocol(self) -> str:
        """The resolved protocol."""
    @property
    def n(self) -> int:
        """Accepted reports so far."""
    @property
    def rejected(self) -> dict[_RejectionReason, int]:
        """Rejected reports so far, by reason."""
    def add(self, report: Union[Mapping[str, Any], str, bytes]) -> None:
        """Adds one report (a dict or one JSON line); raises `Rejected`."""
    def add_many(self, reports: Iterable[Union[Mapping[str, Any], str, bytes]]) -> _Added:
        """Adds many reports; bad ones are counted, never raised."""
    def add_arrow(self, data: Any) -> _Added:
        """Adds Arrow data in the schema of docs/COLUMNAR.md: pandas and
        Polars frames, pyarrow Tables, RecordBatches and readers, anything
        with `__arrow_c_stream__` or `__arrow_c_array__`, or a list of them."""
    def add_parquet(self, path: _Paths) -> _Added:
        """Adds Parquet files of reports and the rejections they were exported with."""
    def add_json_lines(self, path: _Path) -> _Added:
        """Adds a JSON Lines file of reports."""
    def merge(self, other: Aggregator) -> None:
        """Adds everything `other` (same config) accepted and rejected."""
    def to_bytes(self) -> bytes:
        """The state as compact, versioned, checksummed bytes."""
    def rejections(self, limit: int = 10) -> list[_Rejection]:
        """The first refused rows and lines, with their reason."""
    def estimate(self, post: Optional[_PostProcessing] = None, quantiles: Optional[Iterable[float]] = None) -> _Estimate:
        """The estimate: the dict `localdp aggregate --format json` prints."""
    def to_pandas(
        self, post: Optional[_PostProcessing] = None, quantiles: Optional[Iterable[float]] = None, frame: Optional[_Frame] = None
    ) -> Any:
        """The estimate as a long pandas DataFrame: a row per thing estimated."""

@final
class Client:
    """Randomizes values into reports. A `seed` is for simulation and tests
    only: production clients are unseeded (the OS CSPRNG)."""

    def __new__(cls, config: _Config, seed: Optional[int] = None) -> Client: ...
    @property
    def protocol(self) -> str:
        """The resolved protocol."""
    @property
    def epsilon(self) -> float:
        """ε of one report."""
    @property
    def id(self) -> str:
        """The metric's identity, `protocol:epsilon:fingerprint`."""
    def randomize(self, value: _Value) -> _Report:
        """Randomizes one value into a report."""

class Error(Exception):
    """Anything localdp raises for its own reasons."""

class ConfigError(Error, ValueError):
    """A config of the wrong shape or with a parameter out of range."""

    key: Optional[str]
    parameter: Optional[str]

class ValueNotInDomain(Error, ValueError):
    """A client's value is not in the configured domain."""

class InvalidValue(Error, ValueError):
    """A client's numeric value is not finite, or a record has the wrong length."""

class PrivacyBudgetExceeded(Error):
    """A report would exceed the config's privacy budget; nothing was released."""

    cost: Optional[float]
    spent: Optional[float]
    budget: Optional[float]

class Rejected(Error, ValueError):
    """A report refused by `Aggregator.add` (and counted)."""

    reason: Optional[_RejectionReason]

class MergeMismatch(Error, ValueError):
    """Aggregators of different configs cannot be merged."""

class NoReports(Error):
    """An estimate of an aggregator that accepted no report."""

    reason: Literal["no_reports"]
    main_reason: Optional[_RejectionReason]
    rejected: Optional[dict[_RejectionReason, int]]
    file_config: Optional[dict[str, Any]]

class StateError(Error, ValueError):
    """Aggregator state bytes that were refused."""

class ReadError(Error):
    """Arrow data or a Parquet file that cannot be read as a whole."""

class SchemaError(Error, TypeError):
    """Arrow data or a Parquet file with a column that cannot hold the reports' values."""

    column: Optional[str]
    found: Optional[str]
    expected: Optional[str]
