"""Every documented call of localdp, for `mypy --strict` against the stub
(scripts/test-python.sh checks this file; pytest does not collect it)."""

import pickle
from pathlib import Path

import numpy as np

import localdp

config = {"protocol": "oue", "epsilon": 1, "domain": ["chrome", "safari", "edge", "firefox"]}
client = localdp.Client(config, seed=1)
report = client.randomize("chrome")
localdp.Client({"protocol": "grr", "epsilon": 1, "domain": 4}).randomize(3)
localdp.Client({"protocol": "duchi", "epsilon": 1, "range": [[0, 1], [0, 1]]}).randomize([0.5, 0.2])
localdp.Client({"protocol": "piecewise", "epsilon": 1, "range": [0, 1]}).randomize(0.5)
localdp.Client({"protocol": "pckv_grr", "epsilon": 1, "keys": ["a"], "range": [0, 1], "pad": 1}).randomize({"a": 0.5})
localdp.Client({"protocol": "marginals_oue", "epsilon": 1, "attributes": [{"name": "a", "domain": 2}]}).randomize({"a": 1})
protocol: str = client.protocol
epsilon: float = client.epsilon
identity: str = client.id

agg = localdp.Aggregator(config)
agg.add(report)
agg.add('{"version": 1}')
agg.add(b'{"version": 1}')
added = agg.add_many([report, "line", b"line"])
accepted: int = added["accepted"]
malformed: int = added["rejected"]["malformed"]
agg.add_arrow(object())
agg.add_parquet("day.parquet")
agg.add_parquet(Path("reports"))
agg.add_parquet("reports/day=*/*.parquet")
agg.add_parquet(["a.parquet", Path("b.parquet")])
agg.add_json_lines("late.jsonl")
agg.add_json_lines(Path("late.jsonl"))
for rejection in agg.rejections(limit=3):
    where: str = rejection["source"]
    row: int = rejection["row"]
agg.merge(localdp.Aggregator.from_bytes(config, agg.to_bytes()))
agg.merge(localdp.Aggregator.from_parquet("day.parquet"))
copied: localdp.Aggregator = pickle.loads(pickle.dumps(agg))
estimate = agg.estimate()
agg.estimate(post="none")
agg.estimate(post="norm-sub")
agg.estimate(quantiles=[0.1, 0.5])
agg.estimate(quantiles=np.array([0.1, 0.5]))
agg.to_pandas(post="project")
agg.to_pandas(quantiles=np.linspace(0, 1, 5), frame="quantiles")
n: int = agg.n
rejected: int = sum(agg.rejected.values())
try:
    agg.estimate()
except localdp.NoReports as e:
    main_reason = e.main_reason
    file_config = e.file_config
except localdp.SchemaError as e:
    column = e.column
except localdp.ConfigError as e:
    parameter = e.parameter
