// Heavy hitters through the npm package: the same estimate as the CLI for the
// same reports (both ways), memoization keeping the device's group, and a
// value longer than max_length refused without echoing it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Aggregator, protocols } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-heavy-'));
const PAGES = ['/', '/blog', '/shop', '/docs', '/héllo', '/blog/2024/ldp', '/a'];
const CONFIGS = [
  { protocol: 'pem', epsilon: 4, max_length: 16, top: 5 },
  { protocol: 'treehist', epsilon: 6, max_length: 8, top: 3, truncate: true },
  { protocol: 'heavy_hitters', epsilon: 3 },
  { protocol: 'sfp', epsilon: 6, max_length: 16, top: 3, sketch: { hashes: 8, width: 256 } },
  { protocol: 'cms', epsilon: 4, sketch: { hashes: 16, width: 64 }, candidates: ['/', '/blog', '/nowhere'] },
  { protocol: 'hcms', epsilon: 4, sketch: { hashes: 16, width: 64 }, candidates: ['/', '/blog', '/nowhere'] },
];

test('the protocol lists name the heavy-hitter family', () => {
  assert.deepEqual(protocols().heavyHitter, ['cms', 'hcms', 'pem', 'treehist', 'sfp']);
});

CONFIGS.forEach((config, i) => {
  const file = join(dir, `config-${i}.json`);
  writeFileSync(file, JSON.stringify(config));
  // '/' is 40% of the values, '/blog' 20%, the others 10% each. 8,000 of
  // them: from 4,000, SFP listed nothing in 3 of 300 seeded collections.
  const values = Array.from({ length: 8000 }, (_, j) => PAGES[[0, 0, 0, 0, 1, 1, 2, 3, 4, 5][j % 10]]);

  test(`${config.protocol}: JS reports → CLI estimate equals JS estimate`, () => {
    const client = new Client(config);
    const lines = values.map((v) => JSON.stringify(client.randomize(v))).join('\n') + '\n{"broken": true}\n';
    const fromCli = JSON.parse(cli(['aggregate', '--config', file], lines));
    const aggregator = new Aggregator(config);
    aggregator.addMany(lines.trim().split('\n'));
    const estimate = aggregator.estimate();
    assert.deepEqual(estimate, fromCli);
    assert.equal(estimate.n, values.length);
    assert.equal(estimate.rejected.malformed, 1);
    const listed = estimate.heavy_hitters ?? estimate.estimates;
    assert.ok(Array.isArray(listed) && listed.length > 0, JSON.stringify(estimate));
    if (estimate.heavy_hitters) assert.equal(estimate.heavy_hitters[0].value, '/', 'the most frequent page comes first');
  });

  test(`${config.protocol}: CLI reports → JS estimate equals CLI estimate`, () => {
    const lines = cli(['randomize', '--config', file, '--seed', String(i)], values.join('\n') + '\n');
    const aggregator = new Aggregator(config);
    for (const line of lines.trim().split('\n')) aggregator.add(JSON.parse(line));
    assert.deepEqual(aggregator.estimate(), JSON.parse(cli(['aggregate', '--config', file], lines)));
  });
});

test('memoization keeps the device group and resends a value\'s report', () => {
  const client = new Client({ protocol: 'pem', epsilon: 2, max_length: 12, memoize: true });
  const first = client.randomize('/checkout');
  assert.deepEqual(client.randomize('/checkout'), first, 'a repeat is the memoized report');
  const other = client.randomize('/home');
  assert.equal(other.cohort, first.cohort, 'one level per device');
});

test('a value longer than max_length is refused without echoing it, or truncated', () => {
  const strict = new Client({ protocol: 'pem', epsilon: 2, max_length: 4 });
  assert.throws(() => strict.randomize('/secret'), (e) => e instanceof RangeError && !e.message.includes('secret')
    && e.message.includes('truncate'));
  const lenient = new Client({ protocol: 'pem', epsilon: 2, max_length: 4, truncate: true });
  assert.equal(lenient.randomize('/secret').protocol, 'pem');
});
