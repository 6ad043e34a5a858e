// `localdp/client`, the small client module, installed as a user gets it:
// from ESM and CommonJS, interchangeable with the full module's Client (same
// reports, errors and stored state), its reports accepted by the Aggregator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as client from 'localdp/client';
import { Client as FullClient, Aggregator } from 'localdp';
import { memoryStore, fakeLocks } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { Client } = client;


/** The error's class, name and typed properties, to compare two errors. */
function shape(f) {
  try {
    f();
  } catch (e) {
    return { type: e.constructor.name, name: e.name, message: e.message, reason: e.reason, parameter: e.parameter, key: e.key };
  }
  assert.fail('no error');
}

test('ESM and CommonJS give the client, and no Aggregator', () => {
  assert.equal(typeof Client, 'function');
  assert.equal(require('localdp/client').Client.name, 'Client');
  assert.equal('Aggregator' in client, false);
  assert.equal('Aggregator' in require('localdp/client'), false);
  const report = new (require('localdp/client').Client)({ protocol: 'grr', epsilon: 1, domain: 4 }).randomize(2);
  assert.equal(new Aggregator({ protocol: 'grr', epsilon: 1, domain: 4 }).addMany([report]).accepted, 1);
});

const CONFIGS = [
  ...['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'hrr', 'ss', 'auto'].map((protocol) => [{ protocol, epsilon: 2, domain: ['a', 'b', 'c'] }, 'b']),
  [{ protocol: 'dbitflip', epsilon: 2, domain: 8, d: 2 }, 3],
  [{ protocol: 'piecewise', epsilon: 2, range: [0, 10] }, 2.5],
  [{ protocol: 'duchi', epsilon: 2, range: [[0, 1], [0, 10]] }, [0.5, 3]],
  [{ protocol: 'one_bit_mean', epsilon: 1, range: [0, 100], memoize: true }, 40],
  [{ protocol: 'rappor', bits: 32, hashes: 2, cohorts: 4, candidates: ['a', 'b'] }, 'a'],
];

for (const [config, value] of CONFIGS) {
  test(`${config.protocol}: the full module's Aggregator accepts the client module's reports`, () => {
    const small = new Client(config);
    const full = new FullClient(config);
    assert.equal(small.protocol, full.protocol);
    assert.equal(small.epsilon, full.epsilon);
    const reports = Array.from({ length: 200 }, () => small.randomize(value));
    const report = reports[0];
    assert.deepEqual(Object.keys(report), Object.keys(full.randomize(value)), 'the same fields, in order');
    assert.deepEqual(JSON.parse(JSON.stringify(report)), report, 'a report is plain JSON');
    const result = new Aggregator(config).addMany(reports);
    assert.equal(result.accepted, 200, JSON.stringify(result.rejected));
  });
}

test('errors are the full module\'s: class, name, message and properties', () => {
  const cases = [
    [{ protocol: 'grr', epsilon: 0, domain: 4 }],
    [{ protocol: 'grr', epsilon: NaN, domain: 4 }],
    [{ protocol: 'grr', epsilon: 1, domain: 1 }],
    [{ protocol: 'grr', epsilon: '1', domain: 4 }],
    [{ protocol: 'nope', epsilon: 1, domain: 4 }],
    [{ protocol: 'grr', epsilon: 1, domain: 4, extra: true }],
    [{ protocol: 'grr', epsilon: 1, domain: 4, memoize: 1 }],
    [{ protocol: 'duchi', epsilon: 1, range: [5, 5] }],
    [{ protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 2, window: 'soon' } }],
    [{ protocol: 'grr', epsilon: 1, domain: 4 }, 7],
    [{ protocol: 'grr', epsilon: 1, domain: 4 }, 1.5],
    [{ protocol: 'grr', epsilon: 1, domain: 4 }, null],
    [{ protocol: 'olh', epsilon: 1, domain: ['a', 'b'] }, 'secret-value-xyz'],
    [{ protocol: 'duchi', epsilon: 1, range: [0, 1] }, NaN],
    [{ protocol: 'duchi', epsilon: 1, range: [[0, 1], [0, 1]] }, [1]],
    [{ protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 1.5, window: '1d' } }, 1, 2],
  ];
  for (const [config, ...values] of cases) {
    const run = (C) => shape(() => {
      const c = new C(config);
      for (const v of values) c.randomize(v);
    });
    assert.deepEqual(run(Client), run(FullClient), JSON.stringify(config));
  }
});

test('a value that throws while it is read is the error it threw, and either module\'s client stays usable', () => {
  for (const C of [Client, FullClient]) {
    const client = new C({ protocol: 'duchi', epsilon: 1, range: [[0, 1], [0, 1]] });
    const { proxy, revoke } = Proxy.revocable([], {});
    revoke();
    assert.throws(() => client.randomize(proxy), TypeError, 'Array.isArray of a revoked Proxy');
    const item = new Proxy([0.5, 0.5], { get: (target, key) => (key === '0' ? (() => { throw 7; })() : Reflect.get(target, key)) });
    assert.throws(() => client.randomize(item), (e) => e === 7);
    assert.equal(client.randomize([0.5, 0.5]).protocol, 'duchi');
  }
});

test('one storage, either module: memos, ledger and resets carry over', async () => {
  const storage = client.asyncStorage(memoryStore(), { locks: fakeLocks() });
  let now = 1_700_000_000_000;
  const config = { protocol: 'oue', epsilon: 1, domain: 16, memoize: true, budget: { epsilon: 3, window: '1d' } };
  const small = await Client.open(config, { storage, now: () => now });
  const first = await small.randomize(5);
  const full = await FullClient.open(config, { storage, now: () => now });
  assert.equal(full.resets, 0);
  assert.deepEqual(await full.randomize(5), first, 'the full module reads the memo the client module stored');
  await full.randomize(6);
  assert.equal(await small.spent, 2);
  now += 86_400_000;
  assert.equal(await small.spent, 0, 'the window rolled over');
});

test('the state\'s base64 is Buffer\'s, and only its one text of some bytes is read as those bytes', () => {
  // client.mjs's own functions, as the package ships them (Node's copy).
  const { base64, stateBytes } = require(join(dirname(require.resolve('localdp/package.json')), 'dist/client/node/client.cjs'));
  const same = (a, b) => Buffer.from(a).equals(Buffer.from(b));
  // Read as bytes: a text that is Buffer's base64 of what Buffer reads from it, unless those bytes start with
  // `{` (no byte form does); any other text is passed on as its UTF-8, for the core to refuse.
  const read = (text) => {
    const decoded = Buffer.from(text, 'base64');
    return decoded.toString('base64') === text && decoded[0] !== 123 ? decoded : Buffer.from(text);
  };
  let accepted = 0;
  for (const [alphabet, length] of [['AQZagz09+/=*{-', 4], ['Aw/=*', 8]]) {
    const k = alphabet.length;
    for (let n = 0; n < k ** length; n++) {
      let text = '';
      for (let i = 0, m = n; i < length; i++, m = Math.floor(m / k)) text += alphabet[m % k];
      const bytes = stateBytes(text);
      assert.ok(same(bytes, read(text)), text);
      if (base64(bytes) === text) accepted += 1;
    }
  }
  assert.ok(accepted > 5000, `${accepted} texts read as bytes`);
  const strings = [new Uint8Array(0)];
  for (let w = 0; w <= 0xffff; w++) strings.push(Uint8Array.of(w >> 8, w & 255), ...(w < 256 ? [Uint8Array.of(w)] : []));
  for (let n = 3; n < 200; n++) strings.push(Uint8Array.from({ length: n }, (_, i) => (i * 7919 + n) & 255));
  for (const bytes of strings) {
    const text = base64(bytes);
    assert.equal(text, Buffer.from(bytes).toString('base64'));
    assert.ok(same(stateBytes(text), bytes[0] === 123 ? Buffer.from(text) : bytes), text);
  }
  assert.ok(same(stateBytes('e30='), Buffer.from('e30=')), 'the base64 of "{}" is no state');
});

test('the state is stored as the base64 of its bytes, and read back from that one text only', async () => {
  // The JS client writes and reads the base64 itself; Node's Buffer is the reference.
  // Each report adds a ledger entry of 9, 10 or 11 bytes (its time's LEB128, then ε's 8 bytes).
  const times = [1, 2, 3, 200, 300, 400, 40_000, 50_000, 60_000];
  const config = { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 100, window: '1d' } };
  const now = () => 86_000_000;
  const store = memoryStore();
  let time = 0;
  const c = await Client.open(config, { storage: client.asyncStorage(store, { locks: fakeLocks() }), now: () => time });
  const key = [...store.map.keys()].find((k) => k.startsWith('localdp:state-bytes:'));
  const tails = new Map();
  for (const [i, t] of times.entries()) {
    time = t;
    await c.randomize(1);
    const stored = store.map.get(key);
    const bytes = Buffer.from(stored, 'base64');
    assert.equal(bytes.toString('base64'), stored, 'the one base64 text of its bytes');
    assert.equal(bytes.subarray(0, 4).toString(), 'LDPC');
    tails.set(bytes.length % 3, { stored, spent: i + 1 });
  }
  assert.deepEqual([...tails.keys()].sort(), [0, 1, 2], 'whole quads, and one or two bytes past them');
  // Another context reads each text as it was stored, and takes any other text of the same bytes for corrupt.
  const read = async (text) => {
    const other = memoryStore();
    other.map.set('localdp:secret', store.map.get('localdp:secret'));
    other.map.set(key, text);
    const opened = await Client.open(config, { storage: client.asyncStorage(other, { locks: fakeLocks() }), now });
    return [opened.resets, await opened.spent];
  };
  const digits = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (const [tail, { stored, spent }] of tails) {
    assert.deepEqual(await read(stored), [0, spent], `${tail} bytes past whole quads: read back`);
    const others = [
      `${stored.slice(0, 8)}\n${stored.slice(8)}`, // atob would skip the line break
      `${stored}=`,
      `${stored.slice(0, 4)}====${stored.slice(4)}`, // padding inside
      `${stored.slice(0, 4)}-${stored.slice(5)}`, // base64url's digit
    ];
    if (tail > 0) {
      const end = stored.length - 4 + tail; // the last digit, whose low bits are past the last byte
      others.push(stored.replace(/=+$/, ''), stored.slice(0, end) + digits[digits.indexOf(stored[end]) | 1] + stored.slice(end + 1));
    }
    for (const text of others) {
      assert.notEqual(text, stored);
      assert.deepEqual(await read(text), [1, 0], `${JSON.stringify(text.slice(-6))}: another text, a reset`);
    }
  }
});

test('a state stored by the release before (JSON) keeps its ledger and memos, and is stored again as bytes', async () => {
  // tests/fixtures/client-states-v3-v4.json's GRR state, as 469381b stored it.
  const config = { protocol: 'grr', epsilon: 1, domain: ['a', 'b', 'c'], memoize: true, budget: { epsilon: 5, window: '1d' } };
  const secret = '5fa2ed1a32e1d239ee1df5902a9e136017f37da4430956119b69c2d5ee28e4a1';
  const state = "{\"version\":3,\"metric\":\"grr:1.0:e554b29b4737a22d\",\"secret_id\":\"0197933294b36fc33acc15fb7d14758f\",\"window_ms\":86400000,\"memos\":{\"621ed4c6d8a0081815430f7f9383d920\":\"{\\\"version\\\":1,\\\"protocol\\\":\\\"grr\\\",\\\"epsilon\\\":1.0,\\\"domain\\\":\\\"e554b29b4737a22d\\\",\\\"value\\\":1}\",\"e1aa1788ea4bd6a5977980b6dec8b3e3\":\"{\\\"version\\\":1,\\\"protocol\\\":\\\"grr\\\",\\\"epsilon\\\":1.0,\\\"domain\\\":\\\"e554b29b4737a22d\\\",\\\"value\\\":0}\"},\"ledger\":[[1780000000000,1.0],[1780000001000,1.0]],\"draws\":null}";
  const first = { version: 1, protocol: 'grr', epsilon: 1, domain: 'e554b29b4737a22d', value: 0 };
  for (const C of [Client, FullClient]) {
    const store = memoryStore();
    store.map.set('localdp:secret', secret);
    store.map.set(`localdp:state:${JSON.parse(state).metric}`, state);
    const storage = client.asyncStorage(store, { locks: fakeLocks() });
    const c = await C.open(config, { storage, now: () => 1780000003000 });
    assert.equal(await c.spent, 2, 'the ledger is kept');
    assert.equal(c.resets, 0);
    assert.deepEqual(await c.randomize('a'), first, 'the memo is sent again, for nothing');
    assert.equal(await c.spent, 2);
    const stored = store.map.get(`localdp:state-bytes:${JSON.parse(state).metric}`);
    assert.equal(Buffer.from(stored, 'base64').subarray(0, 4).toString(), 'LDPC', 'stored again as bytes (base64)');
    // Under a key of its own: the release before, in a tab still open, reads its own state, not bytes it takes
    // for corrupt (it would start a fresh ledger).
    assert.equal(store.map.get(`localdp:state:${JSON.parse(state).metric}`), state, 'the JSON state is left as it was');
    const again = await C.open(config, { storage, now: () => 1780000003000 });
    assert.equal(await again.spent, 2, 'and read back');
    assert.equal(again.resets, 0);
  }
});

test('a clock past Number.MAX_SAFE_INTEGER ms is refused, and the stored state never turns into a reset', async () => {
  // A clock in µs or ns (performance.timeOrigin * 1000, process.hrtime) would put ledger times above 2^53,
  // which JSON cannot carry exactly: the state must never be stored as a placeholder that reads back as a reset.
  const config = { protocol: 'grr', epsilon: 1, domain: 4, memoize: true, budget: { epsilon: 10, window: '1d' } };
  for (const C of [Client, FullClient]) {
    const store = memoryStore();
    const storage = client.asyncStorage(store, { locks: fakeLocks() });
    let now = 1_700_000_000_000;
    const c = await C.open(config, { storage, now: () => now });
    const report = await c.randomize(1);
    const stored = [...store.map].find(([k]) => k.startsWith('localdp:state-bytes:'))[1];
    now = 2 ** 53 + 2;
    const refused = await c.randomize(2).then(() => assert.fail('no error'), (e) => e);
    assert.equal(refused.constructor.name, 'RangeError');
    assert.equal(refused.parameter, 'now');
    await assert.rejects(c.spent, RangeError);
    assert.throws(() => new C(config, { now: () => now }).spent, RangeError, 'new Client reads the clock alike');
    now = Number.MAX_SAFE_INTEGER;
    assert.equal(await c.spent, 0, 'the last safe ms is a valid time');
    const again = await C.open(config, { storage, now: () => now });
    assert.equal(again.resets, 0, 'the stored state still reads back');
    assert.equal(Buffer.from(stored, 'base64').subarray(0, 4).toString(), 'LDPC', 'the state is stored as bytes');
    assert.deepEqual(await again.randomize(1), report, 'the memo survived');
  }
});
