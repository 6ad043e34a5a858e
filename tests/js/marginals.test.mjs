// Marginals metrics through the npm package: event objects in, the same
// estimate (every 2-way marginal, each field's histogram) as the CLI for
// the same reports, one permanent report per event when memoized, and a
// missing field refused naming it, an unknown one naming no key, never a value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Aggregator, protocols } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-marginals-'));
const attributes = [
  { name: 'browser', domain: ['Chrome', 'Firefox', 'Safari'] },
  { name: 'os', domain: 4 },
  { name: 'mobile', domain: 2 },
];
// Safari always on os 3 and mobile; Chrome and Firefox on desktop.
const events = Array.from({ length: 6000 }, (_, i) =>
  i % 3 === 2 ? { browser: 'Safari', os: 3, mobile: 1 } : { browser: ['Chrome', 'Firefox'][i % 3], os: (i / 3 | 0) % 3, mobile: '0' });

test('the protocol lists name the marginals family', () => {
  assert.deepEqual(protocols().marginals, ['marginals_oue', 'marginals_olh']);
});

for (const protocol of ['marginals_oue', 'marginals_olh', 'marginals']) {
  const config = { protocol, epsilon: 2, way: 2, attributes };
  const file = join(dir, `${protocol}.json`);
  writeFileSync(file, JSON.stringify(config));

  test(`${protocol}: JS reports → CLI estimate equals JS estimate`, () => {
    const client = new Client(config);
    const lines = events.map((e) => JSON.stringify(client.randomize(e))).join('\n') + '\n';
    const fromCli = JSON.parse(cli(['aggregate', '--config', file, '--post', 'project'], lines));
    const aggregator = new Aggregator(config);
    aggregator.addMany(lines.trim().split('\n'));
    const estimate = aggregator.estimate({ post: 'project' });
    assert.deepEqual(estimate, fromCli);
    assert.equal(estimate.protocol, protocol === 'marginals' ? 'marginals_oue' : protocol);
    assert.deepEqual(estimate.marginals.map((m) => m.attributes), [['browser', 'os'], ['browser', 'mobile'], ['os', 'mobile']]);
    const safari = estimate.marginals[0].cells.find((c) => c.values[0] === 'Safari' && c.values[1] === 3);
    assert.ok(Math.abs(safari.frequency - 1 / 3) < 0.06, `${safari.frequency}`);
    const mobile = estimate.histograms[2].values[1];
    assert.ok(Math.abs(mobile.frequency - 1 / 3) < 0.06 && mobile.se > 0, `${mobile.frequency}`);
  });
}

test('memoized: one report per event; a missing field is a TypeError naming it, an unknown one a TypeError naming no key, never the value', () => {
  const client = new Client({ protocol: 'marginals', epsilon: 1, attributes: attributes.slice(0, 2), memoize: true });
  const first = client.randomize({ browser: 'Chrome', os: 2 });
  assert.deepEqual(client.randomize({ os: '2', browser: 'Chrome' }), first);
  assert.throws(() => client.randomize({ browser: 'Chrome' }), (e) => e.field === 'os');
  assert.throws(
    () => client.randomize({ browser: 'Chrome', os: 1, secret_field: 1 }),
    (e) => e instanceof TypeError && e.code === 219 && !('field' in e) && !String(e.message).includes('secret'),
  );
  assert.throws(() => client.randomize({ browser: 'secret-browser', os: 1 }), (e) => e.field === 'browser' && !String(e.message).includes('secret-browser'));
  assert.throws(() => client.randomize('not an object'), TypeError);
});
