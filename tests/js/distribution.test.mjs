// Distribution metrics through the npm package: numbers in, the same
// estimate (histogram, quantiles, mean) as the CLI for the same reports,
// memoization per point of the grid, and a non-number refused without
// echoing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Aggregator, protocols } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-distribution-'));
// Load times spread evenly over 200..1800 ms: the median is 1000.
const values = Array.from({ length: 4000 }, (_, i) => 200 + ((i * 37) % 1600));

test('the protocol lists name the distribution family', () => {
  assert.deepEqual(protocols().distribution, ['square_wave', 'hierarchical']);
});

for (const protocol of ['square_wave', 'hierarchical', 'distribution']) {
  const config = { protocol, epsilon: 2, range: [0, 5000], bins: 16 };
  const file = join(dir, `${protocol}.json`);
  writeFileSync(file, JSON.stringify(config));

  test(`${protocol}: JS reports → CLI estimate equals JS estimate`, () => {
    const client = new Client(config);
    const lines = values.map((v) => JSON.stringify(client.randomize(v))).join('\n') + '\n';
    const fromCli = JSON.parse(cli(['aggregate', '--config', file], lines));
    const aggregator = new Aggregator(config);
    aggregator.addMany(lines.trim().split('\n'));
    const estimate = aggregator.estimate();
    assert.deepEqual(estimate, fromCli);
    assert.equal(estimate.protocol, protocol === 'distribution' ? 'square_wave' : protocol);
    assert.equal(estimate.histogram.length, 16);
    assert.deepEqual(estimate.quantiles.map((q) => q.q), [0.5, 0.9, 0.95, 0.99]);
    const median = estimate.quantiles[0];
    assert.ok(Math.abs(median.value - 1000) < 250, `median ${median.value}`);
    assert.ok(median.ci95[0] <= median.value && median.value <= median.ci95[1]);
    assert.ok(estimate.mean.ci95[0] < estimate.mean.ci95[1]);
  });
}

test('memoized: one report per point of the grid; a non-number is a TypeError without the value', () => {
  const client = new Client({ protocol: 'hierarchical', epsilon: 1, range: [0, 100], bins: 10, memoize: true });
  const first = client.randomize(41);
  assert.deepEqual(client.randomize(41.5), first);
  assert.throws(() => client.randomize('secret-value'), (e) => !String(e.message).includes('secret-value'));
});
