// plan(): the package's planner is the CLI's `localdp plan --format json`,
// number for number, for one config per family; bad options throw typed
// errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plan } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-plan-'));
const CONFIGS = {
  frequency: { protocol: 'auto', epsilon: 1, domain: 16 },
  numeric: { protocol: 'auto', epsilon: 1, range: [0, 10] },
  distribution: { protocol: 'distribution', epsilon: 1, range: [0, 64], bins: 16 },
  sketch: { protocol: 'cms', epsilon: 4, sketch: { hashes: 64, width: 64 }, candidates: ['a', 'b'] },
  discovery: { protocol: 'heavy_hitters', epsilon: 4, max_length: 12, top: 8 },
  rappor: { protocol: 'rappor', bits: 64, hashes: 2, cohorts: 8, candidates: ['a', 'b', 'c'] },
};

for (const [name, config] of Object.entries(CONFIGS)) {
  test(`plan() is localdp plan --format json: ${name}`, () => {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(config));
    for (const targetError of [undefined, 0.02]) {
      const args = ['plan', '--config', file, '--users', '10000', '--format', 'json'];
      const fromCli = JSON.parse(cli(targetError === undefined ? args : [...args, '--target-error', String(targetError)]));
      assert.deepEqual(plan(config, { users: 10000, targetError }), fromCli);
    }
  });
}

test('plan() marks auto\'s choice and the configured protocol', () => {
  const result = plan(CONFIGS.frequency, { users: 10000, targetError: 0.02 });
  assert.equal(result.auto, 'ss');
  assert.deepEqual(result.protocols.filter((p) => p.auto).map((p) => p.protocol), ['ss']);
  const ss = result.protocols.find((p) => p.auto);
  assert.equal(ss.configured, true);
  assert.equal(ss.min_users, 4896);
  assert.ok(ss.users_needed > 10000 && ss.epsilon_needed > 1, JSON.stringify(ss));
  // More users, smaller errors: the bars of the demo's planner card.
  const more = plan(CONFIGS.frequency, { users: 40000 }).protocols.find((p) => p.auto);
  assert.ok(Math.abs(more.errors[0].half_width * 2 - ss.errors[0].half_width) < 1e-12);
});

test('plan() refuses bad options with typed errors', () => {
  assert.throws(() => plan(CONFIGS.frequency, { users: 0 }), RangeError);
  assert.throws(() => plan(CONFIGS.frequency, { users: 1.5 }), RangeError);
  assert.throws(() => plan(CONFIGS.frequency, { users: 100, targetError: 'small' }), TypeError);
  assert.throws(() => plan(CONFIGS.frequency, { users: 100, targetError: -1 }), RangeError);
  assert.throws(() => plan(CONFIGS.frequency), TypeError);
  assert.throws(() => plan({ protocol: 'grr', epsilon: -1, domain: 4 }, { users: 100 }), RangeError);
});
