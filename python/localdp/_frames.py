"""``Aggregator.to_pandas``: an estimate dict as a long DataFrame.

Every frame has the same four columns, ``estimate``, ``std_error``,
``ci95_low`` and ``ci95_high``, after the columns that say what a row
estimates (its key). The frames of each family and their keys:

- frequency, RAPPOR, heavy hitters: ``value`` (one row per value or
  candidate; frequency metrics add ``unbiased_frequency``, the estimate
  before post-processing);
- numeric: ``attribute`` (one row per attribute: its mean);
- distribution, ``frame="histogram"`` (the default): ``lo``, ``hi`` (one
  row per bin: its share); ``frame="quantiles"``: ``q`` (one row per
  quantile level: its value; no standard error, ``std_error`` is NaN);
- key-value: ``key``, ``stat`` (two rows per key: ``"frequency"``, the
  share of users holding the key, and ``"mean"``, the mean of its value);
- marginals, ``frame="marginals"`` (the default): ``marginal`` (its
  attributes joined by ``" x "``), then one column per attribute (the
  cell's value, ``None`` for attributes outside the marginal): one row per
  cell of every marginal; ``frame="histograms"``: ``attribute``, ``value``
  (one row per value of each attribute's own histogram).

The rest of the estimate (``n``, ``epsilon``, ``rejected``…) is in
``DataFrame.attrs``.
"""

import math

from ._errors import ConfigError

# A bin's interval is symmetric: its standard error is the half-width over z
# (Square Wave's half-width also holds a bound on EMS's bias: then the
# standard error that would give the same interval).
_Z95 = 1.959963984540054


def _stat(estimate, se, ci95):
    return {"estimate": estimate, "std_error": se, "ci95_low": ci95[0], "ci95_high": ci95[1]}


def _distribution(estimate, frame):
    if frame == "quantiles":
        return [{"q": q["q"], **_stat(q["value"], math.nan, q["ci95"])} for q in estimate["quantiles"]]
    return [{"lo": b["lo"], "hi": b["hi"], **_stat(b["frequency"], (b["ci95"][1] - b["ci95"][0]) / (2 * _Z95), b["ci95"])}
            for b in estimate["histogram"]]


def _marginals(estimate, frame):
    if frame == "histograms":
        return [{"attribute": h["attribute"], "value": v["value"], **_stat(v["frequency"], v["se"], v["ci95"])}
                for h in estimate["histograms"] for v in h["values"]]
    names = list(dict.fromkeys(a for m in estimate["marginals"] for a in m["attributes"]))
    rows = []
    for marginal in estimate["marginals"]:
        for cell in marginal["cells"]:
            values = dict(zip(marginal["attributes"], cell["values"]))
            rows.append({"marginal": " x ".join(marginal["attributes"]),
                         **{name: values.get(name) for name in names},
                         **_stat(cell["frequency"], cell["se"], cell["ci95"])})
    return rows


def _key_value(estimate):
    return [{"key": k["key"], "stat": stat, **_stat(k[stat]["estimate"], k[stat]["se"], k[stat]["ci95"])}
            for k in estimate["keys"] for stat in ("frequency", "mean")]


def _values(estimate):
    rows = []
    for e in estimate.get("estimates", estimate.get("heavy_hitters", [])):
        row = {"value": e["value"], **_stat(e["frequency"], e["std_error"], e["ci95"])}
        if "unbiased_frequency" in e:
            row["unbiased_frequency"] = e["unbiased_frequency"]
        rows.append(row)
    return rows


# Each family: how its estimate is told apart, its frames (the first is the
# default), the key columns of an empty frame, and its rows.
_FAMILIES = [
    (lambda e: "histogram" in e, ("histogram", "quantiles"), _distribution),
    (lambda e: "marginals" in e, ("marginals", "histograms"), _marginals),
    (lambda e: "keys" in e, ("keys",), lambda e, _: _key_value(e)),
    (lambda e: "mean" in e or "attributes" in e, ("attributes",),
     lambda e, _: [{"attribute": i, **_stat(a["mean"], a["std_error"], a["ci95"])}
                   for i, a in enumerate(e.get("attributes", [e]))]),
    (lambda e: True, ("values",), lambda e, _: _values(e)),
]

_KEYS = {"histogram": ["lo", "hi"], "quantiles": ["q"], "marginals": ["marginal"], "histograms": ["attribute", "value"],
         "keys": ["key", "stat"], "attributes": ["attribute"], "values": ["value"]}


def to_pandas(estimate, frame=None):
    """The DataFrame of an estimate dict; the rest of the estimate in ``attrs``."""
    import pandas as pd  # type: ignore[import-untyped]  # (stubtest: pandas ships no types)

    frames, rows_of = next((frames, rows) for test, frames, rows in _FAMILIES if test(estimate))
    if frame is None:
        frame = frames[0]
    if frame not in frames:
        error = ConfigError(f"frame must be one of {', '.join(map(repr, frames))} for this metric, got {frame!r}")
        error.parameter = "frame"
        raise error
    rows = rows_of(estimate, frame)
    result = pd.DataFrame(rows) if rows else pd.DataFrame(
        columns=_KEYS[frame] + ["estimate", "std_error", "ci95_low", "ci95_high"])
    if frame == "marginals":  # attribute values as they are (ints, labels), None outside a marginal
        for name in result.columns[1:result.columns.get_loc("estimate")]:
            result[name] = pd.Series([row[name] for row in rows], dtype=object)
    result.attrs.update({k: v for k, v in estimate.items()
                         if k not in ("estimates", "heavy_hitters", "histogram", "attributes", "keys", "marginals")})
    return result
