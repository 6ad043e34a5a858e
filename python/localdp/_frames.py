"""``Aggregator.to_pandas``: an estimate dict as a DataFrame."""


def _rows(estimate):
    """The rows of an estimate: a key (value, attribute or bin) with its
    estimate, standard error and 95% interval."""
    if "histogram" in estimate:  # a distribution: one row per bin
        return [{"lo": b["lo"], "hi": b["hi"], "estimate": b["frequency"],
                 # A bin's interval is symmetric: its standard error is the
                 # half-width over z = 1.959964.
                 "std_error": (b["ci95"][1] - b["ci95"][0]) / (2 * 1.959963984540054),
                 "ci95_low": b["ci95"][0], "ci95_high": b["ci95"][1]} for b in estimate["histogram"]]
    if "mean" in estimate or "attributes" in estimate:  # numeric: one row per attribute
        attributes = estimate.get("attributes", [estimate])
        return [{"attribute": i, "estimate": a["mean"], "std_error": a["std_error"],
                 "ci95_low": a["ci95"][0], "ci95_high": a["ci95"][1]} for i, a in enumerate(attributes)]
    values = estimate.get("estimates", estimate.get("heavy_hitters", []))
    rows = []
    for e in values:
        row = {"value": e["value"], "estimate": e["frequency"], "std_error": e["std_error"],
               "ci95_low": e["ci95"][0], "ci95_high": e["ci95"][1]}
        if "unbiased_frequency" in e:
            row["unbiased_frequency"] = e["unbiased_frequency"]
        rows.append(row)
    return rows


def to_pandas(estimate):
    """The DataFrame of an estimate dict; the rest of the estimate in ``attrs``."""
    import pandas as pd

    rows = _rows(estimate)
    frame = pd.DataFrame(rows)
    if not rows:
        key = ["value"]
        frame = pd.DataFrame(columns=key + ["estimate", "std_error", "ci95_low", "ci95_high"])
    frame.attrs.update({k: v for k, v in estimate.items()
                        if k not in ("estimates", "heavy_hitters", "histogram", "attributes")})
    return frame
