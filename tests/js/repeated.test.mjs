// Repeated collection in the package: memoization, the privacy ledger, and
// state kept in a Web-Storage-shaped store across Client instances.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Aggregator } from 'localdp';

/** A Map behind localStorage's two methods. */
function memoryStorage() {
  const map = new Map();
  return {
    map,
    getItem: (k) => (map.has(k) ? map.get(k) : null),
    setItem: (k, v) => void map.set(k, String(v)),
  };
}

const HOUR = 3_600_000;

test('memoized reports repeat, survive a new Client, and keep the value out of storage', () => {
  const storage = memoryStorage();
  const config = { protocol: 'olh', epsilon: 1, domain: ['secret-label-xyz', 'other'], memoize: true };
  const client = new Client(config, { storage });
  assert.equal(client.persistent, true);
  assert.equal(client.resets, 0);
  const first = client.randomize('secret-label-xyz');
  for (let i = 0; i < 10; i++) assert.deepEqual(client.randomize('secret-label-xyz'), first);
  const again = new Client(config, { storage });
  assert.deepEqual(again.randomize('secret-label-xyz'), first, 'the memo outlives the Client');
  for (const [key, value] of storage.map) {
    assert.ok(!key.includes('secret-label-xyz') && !value.includes('secret-label-xyz'), key);
  }
  const other = new Client(config, { storage: memoryStorage() });
  assert.equal(new Aggregator(config).addMany([first, other.randomize('other')]).accepted, 2, 'the aggregator ignores memoize');
});

test('without storage the state lives in memory and says so', () => {
  const client = new Client({ protocol: 'grr', epsilon: 1, domain: 4, memoize: true });
  assert.equal(client.persistent, false);
  assert.deepEqual(client.randomize(2), client.randomize(2));
});

test('the budget refuses with PrivacyBudgetExceeded, persists, and rolls over', () => {
  const storage = memoryStorage();
  let now = 1_700_000_000_000;
  const config = { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 2, window: '1h' } };
  const client = new Client(config, { storage, now: () => now });
  client.randomize(1);
  client.randomize(1);
  assert.equal(client.spent, 2);
  assert.throws(() => client.randomize(1), (e) => e.name === 'PrivacyBudgetExceeded' && e instanceof Error);
  const reloaded = new Client(config, { storage, now: () => now });
  assert.throws(() => reloaded.randomize(3), (e) => e.name === 'PrivacyBudgetExceeded', 'the ledger survives a reload');
  now += HOUR;
  assert.equal(reloaded.randomize(3).protocol, 'grr', 'the window rolled over');
  assert.throws(() => new Client({ ...config, budget: { epsilon: 2 } }), TypeError);
  assert.throws(() => new Client({ ...config, budget: { epsilon: 2, window: 'soon' } }), RangeError);
});

test('corrupt storage starts afresh and counts the reset', () => {
  const storage = memoryStorage();
  const config = { protocol: 'sue', epsilon: 1, domain: 3, memoize: true };
  new Client(config, { storage }).randomize(0);
  const stateKey = [...storage.map.keys()].find((k) => k.startsWith('localdp:state:'));
  storage.setItem(stateKey, '{not json');
  const after = new Client(config, { storage });
  assert.equal(after.resets, 1);
  storage.setItem('localdp:secret', 'tampered');
  assert.equal(new Client(config, { storage }).resets, 2, 'resets accumulate in storage');
  storage.map.delete('localdp:secret');
  assert.equal(new Client(config, { storage }).resets, 3, 'a lost secret beside a stored state is a reset: its memos are lost');
  assert.equal(new Client(config, { storage }).resets, 3, 'the new secret is kept: no further reset');
  assert.throws(() => new Client(config, { storage: {} }), TypeError);
});

test('a storage that cannot write fails closed: no report is released', () => {
  const storage = memoryStorage();
  const client = new Client({ protocol: 'grr', epsilon: 1, domain: 4, memoize: true }, { storage });
  storage.setItem = () => { throw new Error('QuotaExceededError'); };
  assert.throws(() => client.randomize(1), /QuotaExceeded/);
});

test('RAPPOR: one cohort per install, a fresh instantaneous response per report, decoded by candidates', () => {
  const storage = memoryStorage();
  const config = { protocol: 'rappor', bits: 32, hashes: 2, cohorts: 8, candidates: ['alpha', 'bravo', 'absent'], budget: { epsilon: 10, window: '1d' } };
  const client = new Client(config, { storage });
  const reports = Array.from({ length: 20 }, () => client.randomize('alpha'));
  assert.equal(new Set(reports.map((r) => r.cohort)).size, 1);
  assert.ok(new Set(reports.map((r) => r.bits)).size > 1, 'the instantaneous response is fresh');
  assert.ok(client.spent > 4 && client.spent < 5, `one ε_∞ for one value, got ${client.spent}`);
  assert.throws(() => client.randomize(3), TypeError);
  const aggregator = new Aggregator(config);
  for (let i = 0; i < 30000; i++) {
    aggregator.add(new Client(config).randomize(i % 3 === 0 ? 'bravo' : 'alpha'));
  }
  const estimate = aggregator.estimate();
  assert.equal(estimate.protocol, 'rappor');
  assert.deepEqual(estimate.estimates.map((e) => e.value).sort(), ['alpha', 'bravo']);
  for (const e of estimate.estimates) {
    const truth = e.value === 'alpha' ? 2 / 3 : 1 / 3;
    assert.ok(Math.abs(e.frequency - truth) < 6 * e.std_error, `${e.value} ${e.frequency} ± ${e.std_error}`);
  }
});
