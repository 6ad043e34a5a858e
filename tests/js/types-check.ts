// Compiled with `tsc --strict --noEmit` by types.test.mjs: the published
// types are precise enough to catch these mistakes.
import {
  Client, Aggregator, plan, type Config, type FrequencyEstimate, type NumericEstimate, type Plan, type Protocol,
  type Report,
} from 'localdp';

const client = new Client({ protocol: 'auto', epsilon: 1, domain: ['a', 'b', 'c'] });
const protocol: Protocol = client.protocol;
const report: Report = client.randomize('a');
const aggregator = new Aggregator({ protocol: 'auto', epsilon: 1, domain: ['a', 'b', 'c'] });
aggregator.add(report);
aggregator.add(JSON.stringify(report));
const batch = aggregator.addMany([report]);
const accepted: number = batch.accepted + batch.rejected.config_mismatch;
const estimate: FrequencyEstimate = aggregator.estimate({ post: 'norm-sub' });
const [lo, hi]: [number, number] = aggregator.estimate().estimates[0].ci95;
console.log(protocol, accepted, estimate.n, lo, hi);

const timing = new Client({ protocol: 'piecewise', epsilon: 2, range: [0, 5000] });
timing.randomize(1234.5);
const means = new Aggregator({ protocol: 'piecewise', epsilon: 2, range: [0, 5000] });
const mean: NumericEstimate = means.estimate();
const record = new Aggregator({ protocol: 'auto', epsilon: 4, range: [[0, 1], [0, 10]] });
const second: number = record.estimate().attributes[1].mean;
new Client({ protocol: 'duchi', epsilon: 4, range: [[0, 1], [0, 10]] }).randomize([0.5, 3]);
// A config only known as `Config` gives the union, narrowed by its keys.
function size(config: Config): number {
  const either = new Aggregator(config).estimate();
  return 'estimates' in either ? either.estimates.length : 'attributes' in either ? either.attributes.length : 1;
}
console.log(mean.ci95, second, size({ protocol: 'hybrid', epsilon: 1, range: [0, 1] }));

// The planner: its first error's half-width, null where there is no closed form.
const planned: Plan = plan({ protocol: 'auto', epsilon: 1, domain: 16 }, { users: 10000, targetError: 0.02 });
const halfWidth: number | null = planned.protocols[0].errors[0].half_width;
const chosen: Protocol | null = planned.auto;
console.log(halfWidth, chosen, planned.protocols[0].min_users);
// @ts-expect-error: plan needs the users
plan({ protocol: 'grr', epsilon: 1, domain: 3 }, { targetError: 0.1 });

// @ts-expect-error: not a protocol
new Client({ protocol: 'rappor9', epsilon: 1, domain: 3 });
// @ts-expect-error: epsilon is a number
new Client({ protocol: 'grr', epsilon: '1', domain: 3 });
// @ts-expect-error: not a post-processing
aggregator.estimate({ post: 'sideways' });
// @ts-expect-error: estimates have no `count`
aggregator.estimate().estimates[0].count;
// @ts-expect-error: a numeric metric takes numbers
timing.randomize('1234.5');
// @ts-expect-error: a numeric estimate has no per-value estimates
means.estimate().estimates;
// @ts-expect-error: a frequency protocol with a range
new Client({ protocol: 'grr', epsilon: 1, range: [0, 1] });
// @ts-expect-error: new Client keeps its state in memory (Client.open takes a storage)
new Client({ protocol: 'grr', epsilon: 1, domain: 3 }, { storage: { getItem: () => null, setItem: () => {} } });
