// Compiled with `tsc --strict --noEmit` by types.test.mjs: the published
// types are precise enough to catch these mistakes.
import { Client, Aggregator, type Config, type FrequencyEstimate, type FrequencyProtocol, type Report } from 'localdp';

const config: Config = { protocol: 'auto', epsilon: 1, domain: ['a', 'b', 'c'] };
const client = new Client(config);
const protocol: FrequencyProtocol = client.protocol;
const report: Report = client.randomize('a');
const aggregator = new Aggregator(config);
aggregator.add(report);
aggregator.add(JSON.stringify(report));
const batch = aggregator.addMany([report]);
const accepted: number = batch.accepted + batch.rejected.config_mismatch;
const estimate: FrequencyEstimate = aggregator.estimate({ post: 'norm-sub' });
const [lo, hi]: [number, number] = aggregator.estimate().estimates[0].ci95;
console.log(protocol, accepted, estimate.n, lo, hi);

// @ts-expect-error: not a protocol
new Client({ protocol: 'rappor9', epsilon: 1, domain: 3 });
// @ts-expect-error: epsilon is a number
new Client({ protocol: 'grr', epsilon: '1', domain: 3 });
// @ts-expect-error: not a post-processing
aggregator.estimate({ post: 'sideways' });
// @ts-expect-error: estimates have no `count`
aggregator.estimate().estimates[0].count;
