// The packed package, installed as a user would, from ESM and CommonJS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Client, Aggregator } from 'localdp';

const require = createRequire(import.meta.url);
const PROTOCOLS = ['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss'];
const REASONS = ['malformed', 'unsupported_version', 'config_mismatch', 'out_of_range', 'bad_length', 'bad_subset_size'];

test('require() and import give the same classes, ready without init', () => {
  const cjs = require('localdp');
  assert.equal(typeof cjs.Client, 'function');
  assert.equal(typeof cjs.Aggregator, 'function');
  const report = new cjs.Client({ protocol: 'grr', epsilon: 1, domain: 4 }).randomize(2);
  assert.doesNotThrow(() => new Aggregator({ protocol: 'grr', epsilon: 1, domain: 4 }).add(report));
});

for (const protocol of [...PROTOCOLS, 'auto']) {
  test(`${protocol}: reports round-trip through the aggregator`, () => {
    const config = { protocol, epsilon: 2, domain: ['red', 'green', 'blue', 'other'] };
    const client = new Client(config);
    assert.equal(client.protocol, protocol === 'auto' ? client.protocol : protocol);
    assert.ok(PROTOCOLS.includes(client.protocol));
    const aggregator = new Aggregator(config);
    const truth = { red: 0.5, green: 0.3, blue: 0.2, other: 0 };
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const value = i < n * 0.5 ? 'red' : i < n * 0.8 ? 'green' : 'blue';
      const report = client.randomize(value);
      assert.deepEqual(JSON.parse(JSON.stringify(report)), report, 'a report is plain JSON');
      aggregator.add(report);
    }
    const estimate = aggregator.estimate();
    assert.equal(estimate.n, n);
    assert.equal(estimate.protocol, client.protocol);
    assert.deepEqual(Object.keys(estimate.rejected), REASONS);
    for (const e of estimate.estimates) {
      // 6 standard errors: a false alarm has probability ~2e-9 per value.
      assert.ok(Math.abs(e.unbiased_frequency - truth[e.value]) < 6 * e.std_error, `${protocol} ${e.value}`);
      assert.equal(e.ci95.length, 2);
    }
    const projected = aggregator.estimate({ post: 'project' });
    const total = projected.estimates.reduce((s, e) => s + e.frequency, 0);
    assert.ok(Math.abs(total - 1) < 1e-12);
    assert.deepEqual(projected.estimates.map((e) => e.unbiased_frequency), estimate.estimates.map((e) => e.unbiased_frequency));
  });
}

test('bad configs raise TypeError or RangeError with a clear message', () => {
  const range = [
    { protocol: 'grr', epsilon: 0, domain: 4 },
    { protocol: 'grr', epsilon: -1, domain: 4 },
    { protocol: 'grr', epsilon: NaN, domain: 4 },
    { protocol: 'grr', epsilon: Infinity, domain: 4 },
    { protocol: 'grr', epsilon: 1, domain: 1 },
    { protocol: 'grr', epsilon: 1, domain: ['a', 'a'] },
    { protocol: 'grr', epsilon: 1, domain: [] },
  ];
  for (const config of range) {
    assert.throws(() => new Client(config), RangeError, JSON.stringify(config));
    assert.throws(() => new Aggregator(config), RangeError);
  }
  const shape = [
    undefined, null, 3, 'grr',
    { protocol: 'grr', domain: 4 },
    { protocol: 'grr', epsilon: '1', domain: 4 },
    { protocol: 'nope', epsilon: 1, domain: 4 },
    { protocol: 'grr', epsilon: 1, domain: 4, extra: true },
    { protocol: 'grr', epsilon: 1, domain: [1, 2] },
  ];
  for (const config of shape) {
    assert.throws(() => new Client(config), TypeError, JSON.stringify(config));
  }
  assert.throws(() => new Client({ protocol: 'grr', epsilon: 0, domain: 4 }), /epsilon/);
});

test('values outside the domain are RangeErrors that do not echo the value', () => {
  const labels = new Client({ protocol: 'olh', epsilon: 1, domain: ['a', 'b'] });
  const sized = new Client({ protocol: 'grr', epsilon: 1, domain: 4 });
  for (const [client, value] of [[labels, 'secret-value-xyz'], [sized, 7], [sized, 1.5], [sized, -2], [sized, '9']]) {
    assert.throws(() => client.randomize(value), (e) => e instanceof RangeError && !e.message.includes(String(value)));
  }
  assert.throws(() => labels.randomize(3), TypeError);
  assert.throws(() => labels.randomize({}), TypeError);
  assert.equal(typeof sized.randomize('3').value, 'number');
});

test('bad reports: add throws and counts, addMany counts, accepted state stays', () => {
  const config = { protocol: 'ss', epsilon: 1, domain: 10 };
  const client = new Client(config);
  const aggregator = new Aggregator(config);
  const good = Array.from({ length: 100 }, (_, i) => client.randomize(i % 10));
  aggregator.addMany(good);
  const before = aggregator.estimate();
  const bad = [
    [{ version: 1 }, TypeError, 'malformed'],
    ['not json', TypeError, 'malformed'],
    [{ ...good[0], version: 2 }, RangeError, 'unsupported_version'],
    [{ ...good[0], epsilon: 2 }, RangeError, 'config_mismatch'],
    [{ ...good[0], protocol: 'oue' }, RangeError, 'config_mismatch'],
    [{ ...good[0], domain: '0000000000000000' }, RangeError, 'config_mismatch'],
    [{ ...good[0], bits: 'ff' }, RangeError, 'bad_length'],
    [{ ...good[0], bits: 'ffff' }, RangeError, 'bad_length'],
    [{ ...good[0], bits: '0000' }, RangeError, 'bad_subset_size'],
  ];
  for (const [report, type, reason] of bad) {
    assert.throws(() => aggregator.add(report), (e) => e instanceof type && e.reason === reason, reason);
  }
  const result = aggregator.addMany([...bad.map(([r]) => r), good[1], 42, null]);
  assert.equal(result.accepted, 1);
  assert.equal(result.rejected.malformed, 4);
  assert.equal(result.rejected.config_mismatch, 3);
  const after = aggregator.estimate();
  assert.equal(after.n, before.n + 1);
  assert.equal(after.rejected.malformed, 6);
  assert.equal(after.rejected.bad_length, 4);
  assert.throws(() => aggregator.addMany(7), TypeError);
  assert.throws(() => new Aggregator(config).estimate(), /no accepted reports/);
  assert.throws(() => aggregator.estimate({ post: 'sideways' }), RangeError);
});

test('merge: shards combine into the aggregate of their union', () => {
  const config = { protocol: 'hr', epsilon: 1, domain: 20 };
  const client = new Client(config);
  const reports = Array.from({ length: 3000 }, (_, i) => client.randomize(i % 20));
  const whole = new Aggregator(config);
  whole.addMany(reports);
  const left = new Aggregator(config);
  const right = new Aggregator(config);
  left.addMany(reports.slice(0, 1000));
  right.addMany(reports.slice(1000));
  left.merge(right);
  assert.deepEqual(left.estimate(), whole.estimate());
  assert.throws(() => left.merge(new Aggregator({ ...config, epsilon: 2 })), RangeError);
});

test('the browser build draws from crypto.getRandomValues: no two clients agree', () => {
  const config = { protocol: 'olh', epsilon: 1, domain: 100 };
  const seeds = new Set(Array.from({ length: 200 }, () => new Client(config).randomize(5).seed));
  assert.ok(seeds.size > 190);
});

const NUMERIC = ['duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean'];

for (const protocol of [...NUMERIC, 'auto']) {
  test(`${protocol}: numeric reports round-trip to the mean`, () => {
    const config = { protocol, epsilon: 2, range: [0, 1000] };
    const client = new Client(config);
    assert.ok(NUMERIC.includes(client.protocol));
    const aggregator = new Aggregator(config);
    const n = 20000;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const value = i % 10 < 7 ? (i % 200) : 900 + (i % 100); // bimodal
      total += value;
      aggregator.add(client.randomize(value));
    }
    const estimate = aggregator.estimate();
    assert.deepEqual(Object.keys(estimate), ['protocol', 'epsilon', 'n', 'rejected', 'mean', 'std_error', 'ci95']);
    assert.equal(estimate.n, n);
    // 6 standard errors: a false alarm has probability ~2e-9.
    assert.ok(Math.abs(estimate.mean - total / n) < 6 * estimate.std_error, `${estimate.mean} vs ${total / n}`);
    assert.throws(() => aggregator.estimate({ post: 'project' }), RangeError);
  });
}

test('records: every attribute has its mean', () => {
  const config = { protocol: 'piecewise', epsilon: 5, range: [[0, 10], [100, 200], [-1, 1]] };
  const client = new Client(config);
  const aggregator = new Aggregator(config);
  for (let i = 0; i < 30000; i++) aggregator.add(client.randomize([i % 11, 150, -0.5]));
  const { attributes, n } = aggregator.estimate();
  assert.equal(n, 30000);
  assert.equal(attributes.length, 3);
  const truth = [5, 150, -0.5];
  attributes.forEach((a, i) => assert.ok(Math.abs(a.mean - truth[i]) < 6 * a.std_error, `attribute ${i}`));
  assert.throws(() => client.randomize([1, 2]), RangeError);
  assert.throws(() => client.randomize([1, '2', 3]), TypeError);
});

test('numeric values: clipped to the range; NaN, infinities and non-numbers refused', () => {
  const client = new Client({ protocol: 'duchi', epsilon: 1, range: [0, 10] });
  for (const value of [NaN, Infinity, -Infinity]) {
    assert.throws(() => client.randomize(value), (e) => e instanceof RangeError && /finite/.test(e.message));
  }
  for (const value of ['3', {}, null, undefined]) assert.throws(() => client.randomize(value), TypeError);
  assert.equal(typeof client.randomize(1e300).value, 'number', 'out-of-range values are clipped, not refused');
  for (const config of [
    { protocol: 'duchi', epsilon: 1, range: [5, 5] },
    { protocol: 'duchi', epsilon: 1, range: [6, 5] },
    { protocol: 'laplace', epsilon: 0, range: [0, 1] },
    { protocol: 'hybrid', epsilon: 1, range: [] },
  ]) {
    assert.throws(() => new Client(config), (e) => e instanceof RangeError || e instanceof TypeError, JSON.stringify(config));
  }
  assert.throws(() => new Client({ protocol: 'duchi', epsilon: 1, range: [0, 1, 2] }), TypeError);
  assert.throws(() => new Client({ protocol: 'grr', epsilon: 1, range: [0, 1] }), (e) => e instanceof TypeError && /protocol/.test(e.message));
});
