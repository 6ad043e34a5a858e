// Repeated collection in the package: memoization, the privacy ledger, and
// state kept in a storage across clients (`Client.open`); `new Client` keeps
// it in memory only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Aggregator, asyncStorage, compose } from 'localdp';
import { memoryStore, fakeLocks } from './helpers.mjs';

/** A Map behind localStorage's two methods. */
function webStorage() {
  const map = new Map();
  return { getItem: (k) => (map.has(k) ? map.get(k) : null), setItem: (k, v) => void map.set(k, String(v)) };
}

const HOUR = 3_600_000;

test('memoized reports repeat, survive a new client, and keep the value out of storage', async () => {
  const store = memoryStore();
  const storage = asyncStorage(store, { locks: fakeLocks() });
  const config = { protocol: 'olh', epsilon: 1, domain: ['secret-label-xyz', 'other'], memoize: true };
  const client = await Client.open(config, { storage });
  assert.equal(client.persistent, true);
  assert.equal(client.resets, 0);
  const first = await client.randomize('secret-label-xyz');
  for (let i = 0; i < 10; i++) assert.deepEqual(await client.randomize('secret-label-xyz'), first);
  const again = await Client.open(config, { storage });
  assert.deepEqual(await again.randomize('secret-label-xyz'), first, 'the memo outlives the client');
  for (const [key, value] of store.map) {
    assert.ok(!key.includes('secret-label-xyz') && !value.includes('secret-label-xyz'), key);
  }
  const other = new Client(config);
  assert.equal(new Aggregator(config).addMany([first, other.randomize('other')]).accepted, 2, 'the aggregator ignores memoize');
});

test('new Client keeps its state in memory, and says so', () => {
  const client = new Client({ protocol: 'grr', epsilon: 1, domain: 4, memoize: true });
  assert.equal(client.persistent, false);
  assert.equal(client.resets, 0);
  assert.deepEqual(client.randomize(2), client.randomize(2));
});

// Two tabs, each with `new Client` over one localStorage, drew two permanent
// responses for one value (2 distinct responses over 50 alternating reports)
// and spent one budget twice: no storage is taken, and the error says where to go.
test('new Client refuses a storage and points to Client.open', () => {
  const config = { protocol: 'grr', epsilon: 1, domain: 64, memoize: true, budget: { epsilon: 1, window: '1d' } };
  for (const storage of [webStorage(), asyncStorage(memoryStore(), { locks: fakeLocks() }), {}]) {
    assert.throws(() => new Client(config, { storage }), (e) => e instanceof TypeError && /Client\.open/.test(e.message));
  }
  assert.equal(new Client(config, { storage: null }).persistent, false);
});

test('the budget refuses with PrivacyBudgetExceeded, persists, and rolls over', async () => {
  const storage = asyncStorage(memoryStore(), { locks: fakeLocks() });
  let now = 1_700_000_000_000;
  const config = { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 2, window: '1h' } };
  const client = await Client.open(config, { storage, now: () => now });
  await client.randomize(1);
  await client.randomize(1);
  assert.equal(await client.spent, 2);
  await assert.rejects(client.randomize(1), (e) => e.name === 'PrivacyBudgetExceeded' && e instanceof Error);
  const reloaded = await Client.open(config, { storage, now: () => now });
  await assert.rejects(reloaded.randomize(3), (e) => e.name === 'PrivacyBudgetExceeded', 'the ledger survives a reload');
  now += HOUR;
  assert.equal((await reloaded.randomize(3)).protocol, 'grr', 'the window rolled over');
  assert.throws(() => new Client({ ...config, budget: { epsilon: 2 } }), TypeError);
  assert.throws(() => new Client({ ...config, budget: { epsilon: 2, window: 'soon' } }), RangeError);
});

test('configs that differ only in their budget share one ledger: a shorter window forgets nothing', async () => {
  const storage = asyncStorage(memoryStore(), { locks: fakeLocks() });
  let now = 1_700_000_000_000;
  const metric = { protocol: 'grr', epsilon: 1, domain: 8 };
  const day = await Client.open({ ...metric, budget: { epsilon: 2, window: '1d' } }, { storage, now: () => now });
  const hour = await Client.open({ ...metric, budget: { epsilon: 2, window: '1h' } }, { storage, now: () => now });
  await day.randomize(1);
  await day.randomize(2);
  now += 2 * HOUR;
  await hour.randomize(3);
  assert.equal(await day.spent, 3);
  await assert.rejects(day.randomize(4), (e) => e.name === 'PrivacyBudgetExceeded', '3ε in a day against 2ε');
});

// The same device and the same reports (one an hour at ε 0.1, against ε 10.5
// a year): summed, the 105th is refused (105 × 0.1 rounds up past 10.5); the
// app's next version adds δ = 1e-6 to the budget on the same storage, and the
// ledger, now charging the optimal composition (104 reports: 4.8972),
// releases that report and 270 more (375 compose to 10.4863; the 376th
// would pass 10.5).
test('a budget with delta releases what the sum refused, on the same ledger', async () => {
  const storage = asyncStorage(memoryStore(), { locks: fakeLocks() });
  let now = 1_700_000_000_000;
  const metric = { protocol: 'grr', epsilon: 0.1, domain: 4 };
  // Reports released until the first refusal, and that refusal.
  const run = async (client) => {
    for (let released = 0; ; released++) {
      now += HOUR;
      try {
        await client.randomize(released % 4);
      } catch (e) {
        assert.equal(e.name, 'PrivacyBudgetExceeded');
        return [released, e];
      }
    }
  };
  const summed = await Client.open({ ...metric, budget: { epsilon: 10.5, window: '365d' } }, { storage, now: () => now });
  const [first, sumRefusal] = await run(summed);
  assert.equal(first, 104);
  assert.equal(sumRefusal.cost, 0.1);
  assert.ok(sumRefusal.spent > 10.39 && sumRefusal.spent <= 10.5, `${sumRefusal.spent}`);
  now -= HOUR; // the refused report again, at the same time
  const composed = await Client.open({ ...metric, budget: { epsilon: 10.5, delta: 1e-6, window: '365d' } }, { storage, now: () => now });
  const composition = (count) => compose([{ epsilon: 0.1, count }], 1e-6).epsilon;
  assert.equal(await composed.spent, composition(104), 'the 104 reports composed at δ 1e-6');
  const [more, refusal] = await run(composed);
  assert.equal(first + more, 375);
  assert.equal(refusal.spent, composition(375));
  assert.ok(refusal.spent > 10.48 && refusal.spent <= 10.5 && composition(376) > 10.5, `${refusal.spent}`);
  await assert.rejects(summed.randomize(0), (e) => e.name === 'PrivacyBudgetExceeded', 'the sum still refuses on this ledger');
  assert.throws(() => new Client({ ...metric, budget: { epsilon: 1, delta: 0, window: '1d' } }), (e) => e instanceof RangeError && e.parameter === 'budget.delta');
  assert.throws(() => new Client({ ...metric, budget: { epsilon: 1, delta: NaN, window: '1d' } }), (e) => e instanceof TypeError && e.key === 'budget.delta');
});

test('RAPPOR: one cohort per install, a fresh instantaneous response per report, decoded by candidates', () => {
  const config = { protocol: 'rappor', bits: 32, hashes: 2, cohorts: 8, candidates: ['alpha', 'bravo', 'absent'], budget: { epsilon: 10, window: '1d' } };
  const client = new Client(config);
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
  // The list is what the non-negative Lasso fits above 0: 'absent' may be in it, with an interval from 0.
  // Only a candidate that passes the Bonferroni test is shown above 0 (how often an absent one is, with a
  // stated α, is tested seeded in tests/rappor.rs); at 30,000 reports both present ones pass (z > 50).
  const shown = estimate.estimates.filter((e) => e.ci95[0] > 0).map((e) => e.value);
  assert.ok(shown.includes('alpha') && shown.includes('bravo'), JSON.stringify(estimate.estimates));
  for (const e of estimate.estimates.filter((e) => e.value !== 'absent')) {
    const truth = e.value === 'alpha' ? 2 / 3 : 1 / 3;
    assert.ok(Math.abs(e.frequency - truth) < 6 * e.std_error, `${e.value} ${e.frequency} ± ${e.std_error}`);
  }
});
