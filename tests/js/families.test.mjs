// localdp/client/web loads the wasm module of a config's family alone
// (js/client/web/families.js chooses it). This holds each family's module to
// the module of every family on a corpus of configs, valid and invalid (the
// fuzz corpus of configs among them): the same acceptance, the same error
// codes and parameters, and the same reports and state from the same random
// stream. A config placed in the wrong family, or a check that differs
// between the two builds, fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve('localdp/package.json'));
const web = join(packageDir, 'dist/client/web');
const corpusDir = process.env.LOCALDP_FUZZ_CONFIGS;
if (!corpusDir) throw new Error('LOCALDP_FUZZ_CONFIGS must point to fuzz/corpus/config (scripts/test-js.sh sets it)');

// A seeded stream in place of crypto.getRandomValues, for this test alone:
// the wasm reads the platform's CSPRNG through it (getrandom), so two
// modules fed the same stream must draw the same coins.
let state = 0;
const reseed = (seed) => { state = seed >>> 0; };
const next = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
};
Object.defineProperty(globalThis, 'crypto', {
  configurable: true,
  value: {
    getRandomValues(array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = next() & 0xff;
      return array;
    },
  },
});

const { familyOf, composes } = await import(pathToFileURL(join(web, 'families.js')));
const FAMILIES = ['grr', 'frequency', 'numeric', 'rappor', 'heavy', 'distribution', 'key_value', 'marginals'];
// A family whose configs another module serves as well: GRR's, which the frequency module serves.
const SUPERSET = { grr: 'frequency' };

/** A module's ClientCore, instantiated from its bytes. */
async function core(dir) {
  const bindings = await import(pathToFileURL(join(dir, 'bindings.js')));
  bindings.initSync({ module: readFileSync(join(dir, 'localdp_client_bg.wasm')) });
  return bindings.ClientCore;
}
const every = await core(web);
const family = Object.fromEntries(await Promise.all(FAMILIES.map(async (f) => [f, await core(join(web, 'families', f))])));

const attributes = [
  { name: 'browser', domain: ['Chrome', 'Firefox', 'Safari'] },
  { name: 'os', domain: 3 },
];
const corpus = [
  ...readdirSync(corpusDir).sort().map((name) => readFileSync(join(corpusDir, name), 'utf8')).map((text) => {
    try {
      return JSON.parse(text);
    } catch {
      return text; // not JSON: the core's own error
    }
  }),
  // Every family, each chooser and "auto" both ways.
  { protocol: 'grr', epsilon: 1, domain: ['a', 'b', 'c'], memoize: true, budget: { epsilon: 4, window: '1d' } },
  { protocol: 'auto', epsilon: 1, domain: 4 },
  { protocol: 'auto', epsilon: 1, range: [0, 1] },
  { protocol: 'auto', epsilon: 1, domain: 4, range: [0, 1] },
  { protocol: 'hrr', epsilon: 2, domain: 16 },
  { protocol: 'dbitflip', epsilon: 2, domain: 16, d: 4 },
  { protocol: 'olh', epsilon: 4, instantaneous_epsilon: 1, domain: 8, memoize: true },
  { protocol: 'grr', epsilon: 4, instantaneous_epsilon: 1, domain: 8, memoize: true },
  { protocol: 'one_bit_mean', epsilon: 1, range: [0, 10], memoize: true, granularity: 1 },
  { protocol: 'rappor', bits: 32, hashes: 2, cohorts: 4 },
  { protocol: 'rappor', bits: 32, hashes: 2, cohorts: 4, epsilon: 1 },
  { protocol: 'heavy_hitters', epsilon: 2, max_length: 4 },
  { protocol: 'treehist', epsilon: 2, max_length: 4 },
  { protocol: 'cms', epsilon: 2, sketch: { hashes: 2, width: 8 }, candidates: ['a', 'b'] },
  { protocol: 'distribution', epsilon: 1, range: [0, 1] },
  { protocol: 'square_wave', epsilon: 1, range: [0, 1], bins: 8, memoize: true },
  { protocol: 'key_value', epsilon: 1, keys: 8, range: [0, 1] },
  { protocol: 'pckv_grr', epsilon: 1, keys: 8, range: [0, 1], pad: 2 },
  { protocol: 'pckv_ue', epsilon: 1, keys: 8, range: [0, 1], pad: 2, memoize: true },
  { protocol: 'marginals', epsilon: 2, way: 2, attributes },
  { protocol: 'marginals_olh', epsilon: 2, way: 1, attributes, memoize: true },
  // Invalid, inside a family: each family's checks.
  { protocol: 'grr', epsilon: -1, domain: 4 },
  { protocol: 'grr', epsilon: 1, domain: 1 },
  { protocol: 'grr', epsilon: 1 },
  { protocol: 'grr', epsilon: 1, domain: 4, d: 2 },
  { protocol: 'oue', epsilon: 1, domain: 4, range: [0, 1] },
  { protocol: 'duchi', epsilon: 1, range: [1, 0] },
  { protocol: 'duchi', epsilon: 1, range: [0, 1], instantaneous_epsilon: 0.5 },
  { protocol: 'laplace', epsilon: 1, domain: 4 },
  { protocol: 'rappor', bits: 0 },
  { protocol: 'pem', epsilon: 2, max_length: 0 },
  { protocol: 'square_wave', epsilon: 1, range: [0, 1], bins: 1 },
  { protocol: 'pckv_ue', epsilon: 1, keys: 0, range: [0, 1] },
  { protocol: 'marginals', epsilon: 2, way: 3, attributes },
  { protocol: 'grr', epsilon: 1, domain: 4, memoize: 'yes' },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 0.5 } },
  // A budget with "delta": the module of every family, which alone charges it.
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, window: '1d', delta: 1e-6 } },
  { protocol: 'oue', epsilon: 1, domain: 4, memoize: true, budget: { epsilon: 4, window: '1d', delta: 1e-6 } },
  { protocol: 'duchi', epsilon: 1, range: [0, 1], budget: { epsilon: 4, window: '1d', delta: 1e-9 } },
  { protocol: 'pckv_ue', epsilon: 1, keys: 8, range: [0, 1], pad: 2, budget: { epsilon: 4, window: '1h', delta: 1e-6 } },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, window: '1d', delta: 2 } },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, window: '1d', delta: undefined } },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, window: '1d', delta: null } },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: null },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, toJSON: () => ({ epsilon: 4, window: '1d', delta: 1e-6 }) } },
  { protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 4, window: '1d', delta: 1e-6, toJSON: () => ({ epsilon: 4, window: '1d' }) } },
  // Read as the core reads them, through their JSON: no "range" here.
  { protocol: 'auto', epsilon: 1, domain: 4, range: undefined },
  { protocol: 'auto', epsilon: 1, domain: 4, range: { toJSON: () => undefined } },
  // Not placed in a family: the module of every family answers.
  { epsilon: 1, domain: 4 },
  { protocol: 'nope', epsilon: 1, domain: 4 },
  { protocol: 7, epsilon: 1, domain: 4 },
  { protocol: 'toString', epsilon: 1, domain: 4 },
  [],
  null,
  'not a config',
];

/** A value of the config's kind (for an invalid config, anything). */
function valueFor(config) {
  const p = config?.protocol;
  if (Array.isArray(config?.attributes)) return { browser: 'Firefox', os: 2 };
  if (typeof config?.keys === 'number' || p === 'key_value') return { 1: 0.25, 3: 1 };
  if (Array.isArray(config?.range) && !('domain' in config)) {
    const mid = ([lo, hi]) => (lo + hi) / 2;
    return Array.isArray(config.range[0]) ? config.range.map(mid) : mid(config.range);
  }
  if (Array.isArray(config?.domain)) return config.domain[config.domain.length - 1];
  if (typeof config?.domain === 'number') return config.domain - 1;
  return 'ab';
}

/** An error's class, name, message, and own properties in the order they were set. */
const describe = (e) => (e instanceof Error
  ? { class: e.constructor.name, name: e.name, message: e.message, own: Object.getOwnPropertyNames(e).filter((k) => k !== 'stack').map((k) => [k, e[k]]) }
  : { thrown: e });

/** What a module does with the config: its error, or three reports and its state from seed 1. */
function run(ClientCore, config) {
  reseed(1);
  const error = (e) => ({ error: describe(e) });
  let client;
  try {
    client = new ClientCore(config, 'ab'.repeat(32));
  } catch (e) {
    return error(e);
  }
  const reports = [];
  for (let i = 0; i < 3; i++) {
    try {
      reports.push(JSON.stringify(client.randomize(valueFor(config), 1_700_000_000_000 + i)));
    } catch (e) {
      reports.push(error(e));
    }
  }
  return { protocol: client.protocol, epsilon: client.epsilon, id: client.id, reports, state: client.state };
}

test("the table places every protocol of the Rust registry in its family", async () => {
  const { protocols } = await import('localdp');
  const names = { frequency: 'frequency', numeric: 'numeric', openDomain: 'rappor', heavyHitter: 'heavy', distribution: 'distribution', keyValue: 'key_value', marginals: 'marginals' };
  const listed = protocols();
  assert.deepEqual(Object.keys(listed).sort(), Object.keys(names).sort());
  for (const [key, list] of Object.entries(listed)) {
    for (const protocol of list) {
      const config = names[key] === 'numeric' ? { protocol, range: [0, 1] } : { protocol };
      assert.equal(familyOf(config), protocol === 'grr' ? 'grr' : names[key], protocol);
    }
  }
});

test('each family module answers its configs as the module of every family does', () => {
  const placed = new Set();
  for (const config of corpus) {
    const chosen = familyOf(config);
    const expected = run(every, config);
    if (chosen === undefined) {
      assert.ok('error' in expected || composes(config), `${JSON.stringify(config)} is not placed, yet the module of every family accepts it`);
      continue;
    }
    placed.add(chosen);
    assert.deepEqual(run(family[chosen], config), expected, `${JSON.stringify(config)} in the ${chosen} module`);
  }
  assert.deepEqual([...placed].sort(), [...FAMILIES].sort(), 'the corpus reaches every family');
});

test('a family module refuses the configs of the other families', () => {
  for (const config of corpus) {
    const chosen = familyOf(config);
    if (chosen === undefined || 'error' in run(every, config)) continue;
    for (const other of FAMILIES.filter((f) => f !== chosen)) {
      if (SUPERSET[chosen] === other) {
        assert.deepEqual(run(family[other], config), run(every, config), `${JSON.stringify(config)} in the ${other} module`);
      } else {
        assert.ok('error' in run(family[other], config), `${JSON.stringify(config)} accepted by the ${other} module`);
      }
    }
  }
});

test('a config whose budget has "delta" goes to the module of every family; its own family\'s module refuses it (code 313)', () => {
  let composed = 0;
  for (const config of corpus) {
    if (!composes(config)) continue;
    assert.equal(familyOf(config), undefined, JSON.stringify(config));
    const expected = run(every, config);
    if ('error' in expected) continue;
    composed += 1;
    // The config with its budget (as JSON reads it) without "delta", and the family it names.
    const { delta, ...budget } = JSON.parse(JSON.stringify(config.budget));
    const plain = { ...config, budget };
    const own = familyOf(plain);
    for (const f of own === 'grr' ? ['grr', 'frequency'] : [own]) {
      const { error } = run(family[f], config);
      const expected313 = { class: 'Error', name: 'Error', message: '', own: [['message', ''], ['code', 313], ['params', []]] };
      assert.deepEqual(error, expected313, `${JSON.stringify(config)} in the ${f} module`);
    }
    // Without "delta", its own module serves it as the module of every family does.
    assert.ok(delta > 0 && own !== undefined);
    assert.deepEqual(run(family[own], plain), run(every, plain), `${JSON.stringify(plain)} in the ${own} module`);
  }
  assert.ok(composed >= 5, `${composed} configs with "delta" accepted`);
});

test("a family module refuses an earlier release's JSON state (code 312), changing nothing; the module of every family reads it", () => {
  const secret = 'ab'.repeat(32);
  for (const config of corpus) {
    const chosen = familyOf(config);
    if (chosen === undefined || 'error' in run(every, config)) continue;
    const reader = new every(config, secret);
    reader.randomize(valueFor(config), 1_700_000_000_000);
    // The state as a release before this one stored it (JSON of format 4; the module takes the text's UTF-8),
    // read by the module of every family.
    const json = new TextEncoder().encode(JSON.stringify({ version: 4, metric: reader.id, memos: {}, ledger: [[1_700_000_000_000, reader.epsilon]], draws: null }));
    assert.equal(new every(config, secret).load(secret, json), 0, JSON.stringify(config));
    const client = new family[chosen](config, secret);
    const before = client.state;
    assert.throws(() => client.load(secret, json), (e) => e.code === 312 && e.message === '', `${JSON.stringify(config)} in the ${chosen} module`);
    assert.deepEqual(client.state, before, 'nothing changed');
  }
});

// GRR's module has no wasm-bindgen: its bindings, js/raw.mjs, are written by
// hand and read every JS value themselves. Held here to the module of every
// family on what a page may hand a ClientCore: hostile configs (which no
// family is chosen for, so the corpus never sends them to a family's
// module), values of every JS type, clocks, secrets and states.
test("GRR's hand-written bindings answer hostile configs, values, clocks, secrets and states as the module of every family", () => {
  const grr = { protocol: 'grr', epsilon: 1, domain: 4, memoize: true, budget: { epsilon: 3, window: '1d' } };
  const thrown = new Error('a getter threw');
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const cyclic = { ...grr };
  cyclic.self = cyclic;
  const configs = [
    { ...grr, epsilon: NaN },
    { ...grr, epsilon: -Infinity },
    { ...grr, epsilon: 2 ** 60 },
    { ...grr, domain: 2 ** 60 },
    { ...grr, domain: -0 },
    { ...grr, domain: ['a', '\ud800', 'a\u0000b', 'é'] },
    { ...grr, domain: ['a', ['b']] },
    { ...grr, domain: [1, 2] },
    { ...grr, domain: new Array(3) },
    { ...grr, zeta: 1, alpha: 2, epsilno: 3 },
    { ...grr, budget: { epsilon: -1, window: 5 } },
    { ...grr, budget: { epsilon: 1, window: '1w', extra: true } },
    { ...grr, granularity: 0.5 },
    { ...grr, instantaneous_epsilon: 0.5 },
    { ...grr, memoize: false, instantaneous_epsilon: 0.5 },
    // Its third report exceeds the budget: cost, spent and budget all differ.
    { ...grr, epsilon: 0.5, memoize: false, budget: { epsilon: 1.2, window: '1d' } },
    ...[2000, 4000, 5000].flatMap((depth) => [
      { ...grr, nested: JSON.parse('['.repeat(depth) + ']'.repeat(depth)) },
      { ...grr, nested: JSON.parse('{"a":'.repeat(depth) + '1' + '}'.repeat(depth)) },
    ]),
    { ...grr, big: 10n },
    cyclic,
    { get epsilon() { throw thrown; }, protocol: 'grr', domain: 4 },
    { ...grr, get domain() { throw thrown; } },
    { ...grr, toJSON: () => [1, 2] },
    { ...grr, toJSON: () => undefined },
    { ...grr, toJSON: () => ({ protocol: 'grr', epsilon: 2, domain: ['x', 'y'] }) },
    revoked.proxy,
    new Proxy(grr, { ownKeys: () => { throw thrown; } }),
    () => grr,
    Object.assign(Object.create({ inherited: 1 }), grr),
  ];
  const attempt = (f) => {
    try {
      return { value: f() };
    } catch (e) {
      return { error: describe(e) };
    }
  };
  /** What a module does with one config: its construction, then each value, clock, secret and state in turn. */
  const session = (ClientCore, config) => {
    reseed(7);
    const made = attempt(() => new ClientCore(config, 'ab'.repeat(32)));
    if ('error' in made) return made;
    const client = made.value;
    const steps = [];
    const now = 1_700_000_000_000;
    for (const value of [3, '3', 'b', 0, -0, -1, 1.5, 4, 2 ** 53, NaN, Infinity, null, undefined, true, 3n, {}, [3], Symbol('v')]) {
      steps.push(attempt(() => JSON.stringify(client.randomize(value, now))));
    }
    const throwing = { valueOf() { throw thrown; } };
    for (const clock of [-1, NaN, 2 ** 53, 1e300, now + 1, String(now), throwing]) {
      steps.push(attempt(() => client.spent(clock)), attempt(() => JSON.stringify(client.randomize(1, clock))));
    }
    const arrayLike = { length: 2, get 0() { throw thrown; } };
    for (const [secret, state] of [['ab'.repeat(32), undefined], ['ab'.repeat(32), null], ['zz', undefined], ['', client.state],
      ['cd'.repeat(32), client.state], ['ab'.repeat(32), new Uint8Array([1, 2, 3])], ['ab'.repeat(32), new Uint8Array()],
      ['ab'.repeat(32), 'abc'], ['ab'.repeat(32), false], ['ab'.repeat(32), [1, 2]], ['ab'.repeat(32), {}], ['ab'.repeat(32), arrayLike],
      [new String('ab'.repeat(32)), client.state]]) {
      steps.push(attempt(() => client.load(secret, state)), attempt(() => client.state));
    }
    steps.push({ protocol: client.protocol, epsilon: client.epsilon, id: client.id });
    client.free();
    return { steps };
  };
  for (const config of configs) {
    const label = (() => { try { return JSON.stringify(config).slice(0, 200); } catch { return String(typeof config); } })();
    assert.deepEqual(session(family.grr, config), session(every, config), label);
  }
  // A secret that is no string: a TypeError from either (their messages are the engine's and the bindings').
  for (const secret of [undefined, null, 5, Symbol('s'), { toString: () => 'ab'.repeat(32) }]) {
    for (const ClientCore of [family.grr, every]) {
      assert.throws(() => new ClientCore(grr, secret), TypeError, String(typeof secret));
      assert.throws(() => new ClientCore(grr, 'ab'.repeat(32)).load(secret, null), TypeError, String(typeof secret));
    }
  }
});

// GRR's bindings read the config's shape themselves (which keys, which
// types), and the core checks the values after: every key given every type
// of value, and every pair of faults (a shape's and a value's, in every
// order of keys), answered as the module of every family answers; a config
// placed in another family, refused.
test("GRR's bindings read every key of every type, and every pair of faults, as the core does", () => {
  const grr = { protocol: 'grr', epsilon: 1, domain: 4 };
  const values = [null, true, false, 0, 1, -1, 1.5, 3, 2 ** 53, -(2 ** 53), 1e300, 1e-7, 1e21, '', 'grr', '1d',
    'a"\\\n\r\t\u0001\u001f\u007f\u009f\u0000é\ud800', [], ['a', 'b'], [1], [null], {}, { epsilon: 1, window: '1d' }];
  const keys = ['protocol', 'epsilon', 'domain', 'd', 'instantaneous_epsilon', 'memoize', 'budget', 'granularity', 'range',
    'epsilno', 'Epsilon', 'domian', 'memoise', 'budgte', 'instantaneous_epsilom', 'protocl', 'dd', 'x', 'éé', '\ud800', '__proto__'];
  const configs = [];
  for (const key of keys) {
    for (const value of values) configs.push({ ...grr, [key]: value });
    configs.push(Object.fromEntries(Object.entries(grr).filter(([k]) => k !== key)));
  }
  for (const budget of [{ window: '1d' }, { epsilon: 1 }, { epsilon: '1', window: '1d' }, { epsilon: 1, window: 1 }, { epsilon: 0, window: 1 },
    { epsilon: 1, window: '1d', delta: null }, { epsilon: 1, window: '1d', delta: '1' }, { epsilon: 1, window: '1d', delta: 0 },
    { epsilon: 1, window: '1d', delta: 1e-6 }, { epsilon: 1, window: 'd' }, { epsilon: 1, window: '1d', zeta: 0 }, { epsilon: -1, window: '1d', zeta: 0 }]) {
    configs.push({ ...grr, budget });
  }
  // Faults of shape and of value, each pair in both orders of their keys.
  const faults = [{ epsilon: -1 }, { epsilon: 'x' }, { domain: 1 }, { domain: 'x' }, { d: 2 }, { d: -2 }, { instantaneous_epsilon: 2 },
    { instantaneous_epsilon: null }, { memoize: 'yes' }, { budget: { epsilon: -1, window: '1d' } }, { budget: { epsilon: 1, window: '1w' } },
    { budget: [] }, { granularity: 0 }, { protocol: 'oue' }, { protocol: 5 }, { zeta: 1 }, { range: [0, 1] }];
  for (const a of faults) for (const b of faults) if (a !== b) configs.push({ ...grr, ...a, ...b }, { ...b, ...a, ...grr, ...a, ...b });
  let placed = 0;
  for (const config of configs) {
    // A config placed in another family (or none) is the GRR module's to
    // refuse; one with a budget's δ (the module of every family's), as that
    // module refuses it, when it does.
    if (familyOf(config) !== 'grr') {
      const expected = run(every, config);
      if (composes(config) && 'error' in expected) assert.deepEqual(run(family.grr, config), expected, JSON.stringify(config));
      else assert.ok('error' in run(family.grr, config), JSON.stringify(config));
      continue;
    }
    placed += 1;
    assert.deepEqual(run(family.grr, config), run(every, config), JSON.stringify(config));
  }
  assert.ok(placed > 800, `${placed} configs placed in GRR's module`);
  // Numbers JSON.stringify never writes, but JSON.rawJSON may (out of range,
  // -0): each module is handed the text by its JSON.stringify.
  const raw = Symbol('raw JSON');
  const { stringify } = JSON;
  JSON.stringify = function (value, ...rest) {
    return value?.[raw] ?? stringify.call(this, value, ...rest);
  };
  try {
    const base = '"protocol":"grr","memoize":true';
    for (const fields of ['"epsilon":1e400,"domain":4', '"epsilon":-1e400,"domain":4', '"epsilon":-0,"domain":4', '"epsilon":1,"domain":-0',
      '"epsilon":1,"domain":1e400', '"epsilon":1,"domain":["a",1e400]', '"epsilon":1,"domain":4,"d":1e400', '"epsilon":1,"domain":4,"d":-0',
      '"epsilon":2,"domain":4,"instantaneous_epsilon":1e400', '"epsilon":1,"domain":4,"granularity":1e400', '"epsilon":1,"domain":4,"granularity":-0',
      '"epsilon":1,"domain":4,"budget":{"epsilon":1e400,"window":"1d"}', '"epsilon":1,"domain":4,"budget":{"epsilon":-0,"window":"1d"}',
      '"epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1d","delta":1e400}', '"epsilon":1,"domain":4,"budget":{"epsilon":1,"window":"1d","delta":-0}']) {
      const config = { protocol: 'grr', domain: 4, [raw]: `{${base},${fields}}` };
      assert.deepEqual(run(family.grr, config), run(every, config), fields);
    }
  } finally {
    JSON.stringify = stringify;
  }
});

test("GRR's hand-written bindings: a freed core refuses every call, init runs once, and what is passed in is freed", async () => {
  for (const ClientCore of [family.grr, every]) {
    const client = new ClientCore({ protocol: 'grr', epsilon: 1, domain: 4 }, 'ab'.repeat(32));
    client.free();
    for (const call of [() => client.free(), () => client.id, () => client.randomize(1, 0), () => client.load('ab'.repeat(32), null)]) {
      assert.throws(call, { message: 'null pointer passed to rust' });
    }
    assert.equal(typeof ClientCore.prototype[Symbol.dispose], 'function');
    // The caller's code, run by the conversion of a clock or a state, frees the core first.
    const freed = new ClientCore({ protocol: 'grr', epsilon: 1, domain: 4 }, 'ab'.repeat(32));
    assert.throws(() => freed.randomize(1, { valueOf() { freed.free(); return 0; } }), { message: 'null pointer passed to rust' });
    const freedToo = new ClientCore({ protocol: 'grr', epsilon: 1, domain: 4 }, 'ab'.repeat(32));
    assert.throws(() => freedToo.load('ab'.repeat(32), { length: 1, get 0() { freedToo.free(); return 0; } }), { message: 'null pointer passed to rust' });
    assert.equal(new ClientCore({ protocol: 'grr', epsilon: 1, domain: 4 }, 'ab'.repeat(32)).randomize(1, 0).protocol, 'grr');
  }
  // Two init() at once: one instance, which the client made between them keeps using.
  const url = pathToFileURL(join(web, 'families/grr/bindings.js'));
  const fresh = await import(`${url}?twice`);
  const bytes = readFileSync(join(web, 'families/grr/localdp_client_bg.wasm'));
  const first = fresh.default({ module_or_path: bytes });
  const second = fresh.default({ module_or_path: bytes });
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, b);
  // An initSync while an init is fetching: the first instance stays.
  const racing = await import(`${url}?racing`);
  const pending = racing.default({ module_or_path: bytes });
  const now = racing.initSync({ module: bytes });
  const made = new racing.ClientCore({ protocol: 'grr', epsilon: 1, domain: 4 }, 'ab'.repeat(32));
  assert.equal(await pending, now);
  assert.equal(made.randomize(1, 0).protocol, 'grr');
  // Calls that throw after their bytes were passed in leave nothing behind: the memory stays as it was.
  const client = new fresh.ClientCore({ protocol: 'grr', epsilon: 1, domain: ['x'.repeat(100_000), 'y'] }, 'ab'.repeat(32));
  const value = 'x'.repeat(100_000);
  client.randomize(value, 0);
  const before = a.memory.buffer.byteLength;
  const throwing = { valueOf() { throw new Error('no clock'); } };
  const arrayLike = { length: 100_000, get 0() { throw new Error('no state'); } };
  for (let i = 0; i < 200; i++) {
    assert.throws(() => client.randomize(value, throwing), { message: 'no clock' });
    assert.throws(() => client.load(Symbol('secret'), null), TypeError);
    assert.throws(() => client.load('ab'.repeat(32), arrayLike), { message: 'no state' });
    assert.throws(() => new fresh.ClientCore({ protocol: 'grr', epsilon: 1, domain: ['x'.repeat(100_000), 'y'] }, Symbol('secret')), TypeError);
    client.randomize(value, 0);
  }
  assert.equal(a.memory.buffer.byteLength, before);
});
