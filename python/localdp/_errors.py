"""The exceptions of localdp: one base, ``Error``, and a subclass per kind of
failure, named as in the Rust library and the JavaScript package."""


class Error(Exception):
    """Anything localdp raises for its own reasons (a panic in the Rust
    core, a bug, is one too: never a crash).

    >>> import localdp
    >>> issubclass(localdp.NoReports, localdp.Error)
    True
    """


class ConfigError(Error, ValueError):
    """A config of the wrong shape (a missing or unknown key, a value of the
    wrong type: a ``TypeError`` in JavaScript) or with a parameter out of
    range (a ``RangeError`` in JavaScript). ``key`` names the key of a
    malformed config where it is known; ``parameter`` the parameter out of
    range (``"epsilon"``, ``"domain"``, ``"post"``…).

    >>> import localdp
    >>> try:
    ...     localdp.Aggregator({"protocol": "grr", "epsilon": 100, "domain": 4})
    ... except localdp.ConfigError as e:
    ...     print(e.parameter, "|", e)
    epsilon | invalid configuration: epsilon of a frequency metric must be in [0.01, 30.0], got 100.0
    """

    key = None
    parameter = None


class ValueNotInDomain(Error, ValueError):
    """A value given to a ``Client`` is not in the configured domain (the
    value itself is never in the message).

    >>> import localdp
    >>> try:
    ...     localdp.Client({"protocol": "grr", "epsilon": 1, "domain": ["a", "b"]}).randomize("c")
    ... except localdp.ValueNotInDomain as e:
    ...     print(e)
    value is not in the domain (not one of the 2 labels)
    """


class InvalidValue(Error, ValueError):
    """A numeric value given to a ``Client`` is not a finite number, or a
    record has the wrong number of values.

    >>> import localdp
    >>> try:
    ...     localdp.Client({"protocol": "duchi", "epsilon": 1, "range": [[0, 1], [0, 1]]}).randomize([0.5])
    ... except localdp.InvalidValue as e:
    ...     print(e)
    invalid value: expected 2 numbers, got 1
    """


class PrivacyBudgetExceeded(Error):
    """A report would take the ε spent in the config's budget window above
    its budget; nothing was released. ``cost``, ``spent`` and ``budget`` are
    the numbers.

    >>> import localdp
    >>> client = localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4,
    ...                          "budget": {"epsilon": 1.5, "window": "1d"}}, seed=1)
    >>> _ = client.randomize(1)
    >>> try:
    ...     client.randomize(2)
    ... except localdp.PrivacyBudgetExceeded as e:
    ...     print(e.cost, e.spent, e.budget)
    1.0 1.0 1.5
    """

    cost = None
    spent = None
    budget = None


class Rejected(Error, ValueError):
    """A report refused by ``Aggregator.add`` (it is counted under
    ``Aggregator.rejected`` too). ``reason`` is the counted reason:
    ``"malformed"``, ``"unsupported_version"``, ``"config_mismatch"``,
    ``"out_of_range"``, ``"bad_length"`` or ``"bad_subset_size"``.

    >>> import localdp
    >>> try:
    ...     localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4}).add("not json")
    ... except localdp.Rejected as e:
    ...     print(e.reason)
    malformed
    """

    reason = None


class MergeMismatch(Error, ValueError):
    """Two aggregators of different configs cannot be merged.

    >>> import localdp
    >>> a = localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4})
    >>> try:
    ...     a.merge(localdp.Aggregator({"protocol": "grr", "epsilon": 2, "domain": 4}))
    ... except localdp.MergeMismatch as e:
    ...     print(e)
    cannot merge aggregators: the aggregators have different configurations
    """


class NoReports(Error):
    """An estimate was asked of an aggregator that accepted no report.
    ``reason`` is ``"no_reports"``, as in JavaScript. When reports were
    added but all rejected, the message says why: ``main_reason`` is the
    most counted reason, ``rejected`` the counts, and for
    ``"config_mismatch"``, ``file_config`` is the config the data added was
    made for (its ``localdp.config``; ``None`` if it carries none).

    >>> import localdp
    >>> try:
    ...     localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4}).estimate()
    ... except localdp.NoReports as e:
    ...     print(e.reason)
    no_reports
    """

    reason = "no_reports"
    main_reason = None
    rejected = None
    file_config = None


class StateError(Error, ValueError):
    """Aggregator state bytes were refused (``Aggregator.from_bytes``):
    truncated, corrupt, of another format version or of another config.

    >>> import localdp
    >>> try:
    ...     localdp.Aggregator.from_bytes({"protocol": "grr", "epsilon": 1, "domain": 4}, b"nonsense")
    ... except localdp.StateError:
    ...     print("refused")
    refused
    """


class ReadError(Error):
    """Arrow data or a Parquet file that cannot be read as a whole (a
    damaged file, a stream that failed). A row's own problems are never
    raised: they are counted under ``Aggregator.rejected``.

    >>> import localdp, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "damaged.parquet")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"PAR1 not really PAR1")
    >>> try:
    ...     localdp.Aggregator({"protocol": "grr", "epsilon": 1, "domain": 4}).add_parquet(path)
    ... except localdp.ReadError:
    ...     print("unreadable")
    unreadable
    """


class SchemaError(Error, TypeError):
    """Arrow data or a Parquet file with a column that cannot hold the
    reports' values (text in ``value``, numbers in ``id``), or no ``id``
    column; raised before anything of it is counted. ``column`` is the
    column, ``found`` its Arrow type (``None`` for a missing ``id``),
    ``expected`` what it may be.

    >>> import localdp, pyarrow as pa
    >>> config = {"protocol": "grr", "epsilon": 1, "domain": 4}
    >>> table = pa.table({"id": [localdp.Client(config).id], "value": ["2"]})
    >>> try:
    ...     localdp.Aggregator(config).add_arrow(table)
    ... except localdp.SchemaError as e:
    ...     print(e.column, e.found)
    value Utf8
    """

    column = None
    found = None
    expected = None
