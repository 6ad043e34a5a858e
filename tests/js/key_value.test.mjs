// Key-value metrics through the npm package: a user's map (a plain object)
// in, the same estimate as the CLI for the same reports, one report and one
// charge per map, memoized per distinct map, and a key outside the config
// refused without naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Aggregator, protocols } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-key-value-'));
// Every user searched (10 or 30 minutes); a third also shared (50).
const maps = Array.from({ length: 3000 }, (_, i) => (i % 3 === 0 ? { search: 10 + 20 * (i % 2), share: 50 } : { search: 10 + 20 * (i % 2) }));

test('the protocol lists name the key-value family', () => {
  assert.deepEqual(protocols().keyValue, ['pckv_grr', 'pckv_ue']);
});

for (const protocol of ['pckv_grr', 'pckv_ue', 'key_value']) {
  const config = { protocol, epsilon: 4, keys: ['search', 'share', 'print'], range: [0, 60], pad: 2 };
  const file = join(dir, `${protocol}.json`);
  writeFileSync(file, JSON.stringify(config));

  test(`${protocol}: JS reports of maps → CLI estimate equals JS estimate`, () => {
    const client = new Client(config);
    const lines = maps.map((m) => JSON.stringify(client.randomize(m))).join('\n') + '\n';
    const fromCli = JSON.parse(cli(['aggregate', '--config', file], lines));
    const aggregator = new Aggregator(config);
    aggregator.addMany(lines.trim().split('\n'));
    const estimate = aggregator.estimate();
    assert.deepEqual(estimate, fromCli);
    assert.equal(estimate.protocol, protocol === 'key_value' ? 'pckv_grr' : protocol);
    assert.deepEqual(estimate.keys.map((k) => k.key), ['search', 'share', 'print']);
    const [search, share] = estimate.keys;
    // Six standard errors: far from a flaky bound.
    assert.ok(Math.abs(search.frequency.estimate - 1) < 6 * search.frequency.se, JSON.stringify(search));
    assert.ok(Math.abs(share.mean.estimate - 50) < 6 * share.mean.se, JSON.stringify(share));
    assert.deepEqual(Object.keys(search.mean).sort(), ['ci95', 'estimate', 'se']);
  });
}

test('a map is one value: one charge; memoized, one report per distinct map', () => {
  const budget = { epsilon: 10, window: '1d' };
  const client = new Client({ protocol: 'pckv_ue', epsilon: 1, keys: 8, range: [0, 1], pad: 2, budget });
  client.randomize({ 0: 1, 1: 0.5, 2: 0, 7: 1 });
  assert.equal(client.spent, 1);
  const memo = new Client({ protocol: 'pckv_ue', epsilon: 1, keys: 8, range: [0, 1], pad: 2, memoize: true, budget });
  const first = memo.randomize({ 3: 0.25, 5: 1 });
  assert.deepEqual(memo.randomize({ 5: 1, 3: 0.25 }), first);
  assert.equal(memo.spent, 1);
});

test('a key outside the config or a value that is not a number is refused without naming it', () => {
  const client = new Client({ protocol: 'key_value', epsilon: 1, keys: ['a', 'b'], range: [0, 1], pad: 1 });
  assert.throws(() => client.randomize({ 'secret-feature': 1 }), (e) => !String(e.message).includes('secret'));
  assert.throws(() => client.randomize({ a: 'secret-value' }), (e) => !String(e.message).includes('secret'));
  assert.throws(() => client.randomize(3), TypeError);
  client.randomize({});
});
