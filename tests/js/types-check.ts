// Compiled with `tsc --strict --noEmit` by types.test.mjs: the published
// types are precise enough to catch these mistakes.
import {
  Client, Aggregator, compose, shuffle, plan, type Config, type FrequencyEstimate, type NumericEstimate, type Plan,
  type Protocol, type Report,
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

// The accountant, and a budget with a δ.
const year: number = compose([{ epsilon: 0.1, count: 365 }], 1e-6).epsilon;
const central: number | null = shuffle({ epsilon: 4, n: 100000, delta: 1e-6, protocol: 'grr', domain: 16 }).closed_form;
// @ts-expect-error: report groups are objects, not pairs
compose([[0.1, 365]], 1e-6);
// @ts-expect-error: grr is the one protocol with a bound of its own
shuffle({ epsilon: 4, n: 100000, delta: 1e-6, protocol: 'oue', domain: 16 });
new Client({ protocol: 'grr', epsilon: 0.1, domain: 4, budget: { epsilon: 10, delta: 1e-6, window: '365d' } });
console.log(year, central);

// An `as const` config (readonly arrays) is a config, and keeps its literal protocol.
const pages = { protocol: 'oue', epsilon: 2, domain: ['home', 'pricing', 'docs'], memoize: true } as const;
const labelled = new Client(pages);
const oue: 'oue' = labelled.protocol;
const label: Report = labelled.randomize('pricing');
new Aggregator(pages).add(label);
const shared = Client.open(pages).then(async (c) => { const p: 'oue' = c.protocol; return [p, await c.randomize('docs')]; });
const limits = { protocol: 'duchi', epsilon: 4, range: [[0, 1], [0, 10]] } as const;
new Client(limits).randomize([0.5, 3]);
const second2: number = new Aggregator(limits).estimate().attributes[1].mean;
const histogram = { protocol: 'distribution', epsilon: 1, range: [0, 100], bins: 8 } as const;
const wave: 'square_wave' | 'hierarchical' = new Client(histogram).protocol;
new Client({ protocol: 'cms', epsilon: 2, candidates: ['a', 'b'] } as const).randomize('a');
// A key-value client takes a user's map; its aggregator returns each key's frequency and mean.
const features = { protocol: 'key_value', epsilon: 2, keys: ['search', 'share'], range: [0, 60], pad: 2 } as const;
const pckv: 'pckv_grr' | 'pckv_ue' = new Client(features).protocol;
new Aggregator(features).add(new Client(features).randomize({ search: 12, share: 3 }));
const shareMean: number = new Aggregator(features).estimate().keys[1].mean.estimate;
// "auto" resolves within its family.
const frequency: 'grr' | 'oue' | 'olh' | 'sue' | 'blh' | 'hr' | 'hrr' | 'ss' | 'dbitflip' = new Client({ protocol: 'auto', epsilon: 1, domain: 4 }).protocol;
console.log(oue, shared, second2, wave, pckv, shareMean, frequency);

// Marginals: an event object in, a MarginalsEstimate out, "marginals" resolving within its family.
const events = { protocol: 'marginals', epsilon: 2, attributes: [{ name: 'browser', domain: ['Chrome', 'Safari'] }, { name: 'os', domain: 6 }] } as const;
const joint: 'marginals_oue' | 'marginals_olh' = new Client(events).protocol;
new Client(events).randomize({ browser: 'Safari', os: 3 });
const pair: string[] = new Aggregator(events).estimate().marginals[0].attributes;
const cellSe: number = new Aggregator(events).estimate().histograms[1].values[0].se;
console.log(joint, pair, cellSe);
// @ts-expect-error: an event is an object, not a string
new Client(events).randomize('Safari');

// @ts-expect-error: a string domain's client takes strings, not numbers
labelled.randomize(1);
// @ts-expect-error: also when the config is written inline
new Client({ protocol: 'grr', epsilon: 1, domain: ['a', 'b'] }).randomize(0);
// @ts-expect-error: and for a client of Client.open
Client.open(pages).then((c) => c.randomize(2));
// @ts-expect-error: a key-value client takes a map, not a number
new Client(features).randomize(3);
// @ts-expect-error: the protocol is the config's, not another
const other: 'grr' = labelled.protocol;
console.log(other);
// @ts-expect-error: an `as const` string domain takes its labels only
labelled.randomize('Pricing');
// send posts what randomize takes, and resolves to the collector's answer.
const answered: Promise<number> = labelled.send('/api/metrics/pages/reports', 'docs').then((answer) => answer.accepted);
// @ts-expect-error: not a label of the domain
labelled.send('/api/metrics/pages/reports', 'blog');
console.log(answered);
