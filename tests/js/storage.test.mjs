// Storage adapters and Client.open in Node: the adapters' serialization
// (Web Locks and compare-and-set with retries) over an in-memory async store,
// and many clients over one store behaving as one device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, asyncStorage, chromeStorage, indexedDBStorage } from 'localdp';
import { memoryStore, fakeLocks } from './helpers.mjs';

/** `n` concurrent read-increment-writes of one key through `storage`; resolves to how often `fn` ran. */
async function increments(storage, n) {
  let calls = 0;
  await Promise.all(Array.from({ length: n }, () => storage.update(['count'], (values) => {
    calls += 1;
    return { count: String(Number(values.count ?? 0) + 1) };
  })));
  return calls;
}

test('Web Locks: concurrent read-modify-writes are serialized', async () => {
  const store = memoryStore();
  assert.equal(await increments(asyncStorage(store, { locks: fakeLocks() }), 50), 50);
  assert.equal(store.map.get('count'), '50');
});

test('compare-and-set: conflicts re-read and retry until every update is stored once', async () => {
  const store = memoryStore();
  const calls = await increments(asyncStorage(store, { locks: null }), 50);
  assert.equal(store.map.get('count'), '50', 'no update lost');
  assert.ok(calls > 50, `conflicting updates were retried (${calls} calls)`);
});

test('the same store without serialization loses updates (what the adapters prevent)', async () => {
  const store = memoryStore();
  const naive = {
    async update(keys, fn) {
      const values = { count: await store.get('count') };
      for (const [key, value] of Object.entries(fn(values))) await store.set(key, value);
    },
  };
  await increments(naive, 50);
  assert.notEqual(store.map.get('count'), '50');
});

test('an update whose fn throws writes nothing and rejects with its error', async () => {
  for (const locks of [fakeLocks(), null]) {
    const store = memoryStore();
    const storage = asyncStorage(store, { locks });
    const refusal = new RangeError('refused');
    await assert.rejects(storage.update(['a'], () => {
      throw refusal;
    }), (e) => e === refusal);
    assert.equal(store.map.size, 0);
  }
});

test('a store that always conflicts fails with StorageConflict instead of spinning', async () => {
  const store = { get: async () => undefined, set: async () => {}, compareAndSet: async () => false };
  await assert.rejects(asyncStorage(store, { locks: null }).update(['a'], () => ({ a: '1' })),
    (e) => e.name === 'StorageConflict' && e.reason === 'conflict');
});

test('adapters refuse what cannot be serialized or is not a store', () => {
  assert.throws(() => asyncStorage({ get: async () => {}, set: async () => {} }, { locks: null }), TypeError);
  assert.throws(() => asyncStorage({ getItem() {}, setItem() {} }), TypeError);
  assert.throws(() => chromeStorage(), TypeError, 'no chrome.storage in Node');
  assert.throws(() => indexedDBStorage(), TypeError, 'no IndexedDB in Node');
});

const GRR = { protocol: 'grr', epsilon: 1, domain: 64, memoize: true, budget: { epsilon: 5, window: '1d' } };

for (const [mode, locks] of [['Web Locks', fakeLocks()], ['compare-and-set', null]]) {
  test(`Client.open (${mode}): four clients on one store are one device`, async () => {
    const store = memoryStore();
    const storage = asyncStorage(store, { locks });
    const clients = await Promise.all(Array.from({ length: 4 }, () => Client.open(GRR, { storage })));
    assert.deepEqual(clients.map((c) => [c.protocol, c.epsilon, c.persistent, c.resets]), Array(4).fill(['grr', 1, true, 0]));
    assert.equal([...store.map.keys()].filter((k) => k === 'localdp:secret').length, 1);
    const values = [3, 9, 17, 30, 41, 55, 62, 63];
    const outcomes = await Promise.all(clients.flatMap((client) => Array.from({ length: 40 }, (_, i) => {
      const value = values[i % values.length];
      return client.randomize(value).then((report) => ({ value, report }), (error) => ({ value, error }));
    })));
    const reported = new Map();
    for (const { value, report, error } of outcomes) {
      if (error) {
        assert.equal(error.name, 'PrivacyBudgetExceeded');
        continue;
      }
      (reported.get(value) ?? reported.set(value, new Set()).get(value)).add(report.value);
    }
    for (const [value, reports] of reported) assert.equal(reports.size, 1, `one permanent response for ${value}`);
    assert.equal(reported.size, 5, 'a budget of 5 at ε = 1 pays for five values, across all clients');
    assert.ok(outcomes.some((o) => o.error), 'the others were refused');
    for (const client of clients) assert.equal(await client.spent, 5);
  });
}

test('Client.open: corrupt stored state counts a reset, seen by every client', async () => {
  const store = memoryStore();
  const storage = asyncStorage(store, { locks: fakeLocks() });
  const first = await Client.open(GRR, { storage });
  await first.randomize(1);
  const stateKey = [...store.map.keys()].find((k) => k.startsWith('localdp:state-bytes:'));
  store.map.set(stateKey, '{not a state');
  const second = await Client.open(GRR, { storage });
  assert.equal(second.resets, 1);
  await first.randomize(1);
  assert.equal(first.resets, 1, 'the other client reads the count with the state');
  store.map.set('localdp:secret', 'tampered');
  await second.randomize(2);
  assert.equal(second.resets, 2);
  store.map.delete('localdp:secret');
  await first.randomize(2);
  assert.equal(first.resets, 3, 'a lost secret beside a stored state is a reset: its memos are lost');
  await second.randomize(2);
  assert.equal(second.resets, 3, 'the new secret is kept: no further reset');
  await assert.rejects(Client.open(GRR, { storage: { getItem() {}, setItem() {} } }), TypeError);
});

const OUE = { protocol: 'oue', epsilon: 1, domain: 8, memoize: true };

test('Client.open: a lost secret is a reset for every metric whose memos it keyed', async () => {
  const store = memoryStore();
  const storage = asyncStorage(store, { locks: fakeLocks() });
  for (const config of [GRR, OUE]) await (await Client.open(config, { storage })).randomize(1);
  store.map.delete('localdp:secret');
  const after = [await Client.open(GRR, { storage }), await Client.open(OUE, { storage })];
  assert.deepEqual(after.map((c) => c.resets), [1, 1], 'not only the first metric to notice');
  assert.equal(await after[0].spent, 1, 'the ledger is kept');
  const again = [await Client.open(GRR, { storage }), await Client.open(OUE, { storage })];
  assert.deepEqual(again.map((c) => c.resets), [1, 1], 'counted once');
});

for (const [mode, locks] of [['Web Locks', fakeLocks()], ['compare-and-set', null]]) {
  test(`Client.open (${mode}): storage wiped under open clients is a reset for each`, async () => {
    const store = memoryStore();
    const storage = asyncStorage(store, { locks });
    // Two metrics, and a second client of the first (another tab).
    const clients = [await Client.open(GRR, { storage }), await Client.open(OUE, { storage }), await Client.open(GRR, { storage })];
    for (const client of clients) await client.randomize(1);
    store.map.clear(); // site data cleared while the page is open
    for (const client of clients) await client.randomize(1);
    assert.deepEqual(clients.map((c) => c.resets), [1, 1, 1], 'each metric counts once: its clients still held the lost secret');
    for (const client of clients) await client.randomize(2);
    assert.deepEqual(clients.map((c) => c.resets), [1, 1, 1], 'counted once');
    assert.equal((await Client.open(OUE, { storage })).resets, 1, 'and stored for every context');
  });
}

for (const [mode, locks] of [['Web Locks', fakeLocks()], ['compare-and-set', null]]) {
  test(`Client.open (${mode}): storage wiped under an open client leaves it the budget it spent`, async () => {
    const store = memoryStore();
    const storage = asyncStorage(store, { locks });
    const config = { ...GRR, budget: { epsilon: 2, window: '1d' } };
    const client = await Client.open(config, { storage });
    await client.randomize(1);
    await client.randomize(2);
    store.map.clear(); // site data cleared while the page is open
    assert.equal(await client.spent, 2, 'the wipe returned no budget');
    await assert.rejects(client.randomize(3), { name: 'PrivacyBudgetExceeded' });
    assert.equal(client.resets, 1, 'counted as a reset, as before');
    assert.equal(await (await Client.open(config, { storage })).spent, 2, 'and stored for every context');
  });
}

test('Client.open fails closed: a storage that cannot write releases no report', async () => {
  const store = memoryStore();
  const storage = asyncStorage(store, { locks: fakeLocks() });
  const client = await Client.open(GRR, { storage });
  store.set = async () => {
    throw new Error('QuotaExceededError');
  };
  await assert.rejects(client.randomize(1), /QuotaExceeded/);
});
