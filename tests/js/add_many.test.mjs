// Aggregator.addMany reads a batch's reports into columns and counts them
// with the kernels; any report that is not exactly one of the metric's, as
// a client writes it, is read alone. Either way it must decide every report
// as `add` does one at a time: the same accepted count, the same rejections
// by reason, the same estimate, for every family, whatever is in the batch.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Client, Aggregator } from 'localdp';

// One config of every family (and every payload shape), and a value for each i.
const CONFIGS = [
  ...['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'hrr', 'ss'].map((protocol) => [{ protocol, epsilon: 2, domain: 10 }, (i) => i % 10]),
  [{ protocol: 'dbitflip', epsilon: 2, domain: 8, d: 2 }, (i) => i % 8],
  ...['duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean'].map((protocol) => [{ protocol, epsilon: 1, range: [0, 10] }, (i) => i % 11]),
  [{ protocol: 'duchi', epsilon: 2, range: [[0, 1], [0, 10]] }, (i) => [(i % 3) / 2, i % 11]],
  [{ protocol: 'rappor', bits: 32, hashes: 2, cohorts: 4, candidates: ['a', 'b'] }, (i) => 'ab'[i % 2]],
  [{ protocol: 'hcms', epsilon: 4, sketch: { hashes: 16, width: 64 } }, (i) => `/page/${i % 5}`],
  [{ protocol: 'heavy_hitters', epsilon: 3 }, (i) => `/page/${i % 5}`],
  [{ protocol: 'distribution', epsilon: 1, range: [0, 64], bins: 16 }, (i) => i % 64],
  [{ protocol: 'hierarchical', epsilon: 1, range: [0, 100], bins: 10 }, (i) => i % 100],
  [{ protocol: 'key_value', epsilon: 1, keys: ['a', 'b'], range: [0, 1], pad: 1 }, (i) => ({ a: (i % 3) / 2 })],
  [{ protocol: 'marginals', epsilon: 4, attributes: [{ name: 'x', domain: 3 }, { name: 'y', domain: ['p', 'q'] }] }, (i) => ({ x: i % 3, y: 'pq'[i % 2] })],
];

/** Each field's hostile values: types JSON has and JS adds, numbers at every edge. */
const ODD = [-0, 1.5, -1, 2 ** 32, 2 ** 53, NaN, Infinity, null, undefined, '3', true, [], {}, [1], 10n ** 30n];

/**
 * Reports made from `report` that a client does not write, as functions
 * (each call a fresh object, so `add` and `addMany` meet the same ones).
 */
function variants(report) {
  const out = [];
  const plain = () => ({ ...report });
  const json = JSON.stringify(report);
  out.push(() => json, () => JSON.stringify(report, null, 1), () => json.toUpperCase(), () => `${json} x`, () => '');
  out.push(() => Object.fromEntries(Object.entries(report).reverse())); // another key order: still a report
  out.push(() => ({ ...report, extra: 1 }), () => Object.create(plain()), () => [report], () => 7, () => null, () => undefined);
  out.push(() => ({ ...report, toJSON: () => report }));
  for (const key of Object.keys(report)) {
    out.push(() => {
      const r = plain();
      delete r[key];
      return r;
    });
    for (const odd of ODD) out.push(() => ({ ...report, [key]: odd }));
  }
  for (const key of ['seed', 'value', 'cohort', 'bits', 'attributes', 'values']) {
    if (!(key in report)) out.push(() => ({ ...report, [key]: key === 'bits' ? '00' : key.endsWith('s') ? [0] : 0 }));
  }
  out.push(() => ({ ...report, epsilon: report.epsilon * (1 + 2 ** -52) }), () => ({ ...report, version: '1' }));
  if (typeof report.bits === 'string') {
    out.push(() => ({ ...report, bits: report.bits.toUpperCase() }), () => ({ ...report, bits: report.bits.slice(1) }));
    out.push(() => ({ ...report, bits: `zz${report.bits.slice(2)}` }), () => ({ ...report, bits: `${report.bits}00` }));
  }
  if (Array.isArray(report.attributes)) {
    out.push(() => ({ ...report, attributes: [...report.attributes].reverse() }), () => ({ ...report, values: [...report.values, 0] }));
    out.push(() => ({ ...report, attributes: report.attributes.map((a) => a + 2 ** 32) }));
  }
  for (const key of ['seed', 'value', 'cohort']) {
    if (key in report) out.push(() => ({ ...report, [key]: 2 ** 32 + report[key] }), () => ({ ...report, [key]: 1e6 }));
  }
  // A getter is read once: another version the first time, this one after.
  out.push(() => {
    let reads = 0;
    const r = { ...report, extra: 1 };
    delete r.version;
    return Object.defineProperty(r, 'version', { enumerable: true, get: () => (reads++ === 0 ? 2 : 1) });
  });
  out.push(() => Object.defineProperty(plain(), 'value', { enumerable: true, get: () => { throw new Error('getter'); } }));
  return out;
}

/** `add` of each report, errors counted and dropped. */
function oneByOne(config, reports) {
  const aggregator = new Aggregator(config);
  for (const report of reports) {
    try {
      aggregator.add(report);
    } catch {
      // counted under `rejected`
    }
  }
  return aggregator;
}

const snapshot = (aggregator) => {
  let estimate;
  try {
    estimate = aggregator.estimate();
  } catch (e) {
    estimate = e.name;
  }
  return { n: aggregator.n, rejected: aggregator.rejected, estimate };
};

for (const [config, value] of CONFIGS) {
  test(`${config.protocol}: addMany decides every report as add does`, () => {
    const client = new Client(config);
    const good = Array.from({ length: 300 }, (_, i) => client.randomize(value(i)));
    // Good reports, objects and JSON lines, with every variant of a few of them in between.
    const make = [...good.map((r) => () => r), ...good.slice(0, 100).map((r) => () => JSON.stringify(r))];
    for (const report of good.slice(0, 3)) make.push(...variants(report));
    const order = make.map((_, i) => (i * 7919) % make.length); // mixed, the same both times
    const many = new Aggregator(config);
    const result = many.addMany(order.map((i) => make[i]()));
    const single = oneByOne(config, order.map((i) => make[i]()));
    assert.deepEqual(snapshot(many), snapshot(single));
    assert.equal(result.accepted, single.n);
    assert.deepEqual(result.rejected, single.rejected);
    assert.ok(single.n >= 400, `${single.n} accepted`);
  });
}

test('addMany: batches past a column batch (4096 rows), a shape change between rows, any iterable', () => {
  const config = { protocol: 'grr', epsilon: 1, domain: 16 };
  const client = new Client(config);
  const reports = Array.from({ length: 10000 }, (_, i) => client.randomize(i % 16));
  const mixed = reports.map((r, i) => (i % 1000 === 999 ? { ...r, seed: 1 } : r));
  const many = new Aggregator(config);
  many.addMany(new Set(mixed));
  assert.deepEqual(snapshot(many), snapshot(oneByOne(config, mixed)));
  assert.equal(many.n, 9990);
  assert.equal(many.rejected.malformed, 10);
});

test('addMany of an iterable that throws throws what it threw, adds nothing, and the Aggregator stays usable', () => {
  const config = { protocol: 'grr', epsilon: 1, domain: 3 };
  const aggregator = new Aggregator(config);
  const thrown = new Error('iterator');
  const throwing = { *[Symbol.iterator]() { yield new Client(config).randomize(1); throw thrown; } };
  assert.throws(() => aggregator.addMany(throwing), (e) => e === thrown);
  assert.equal(aggregator.n, 0);
  assert.equal(aggregator.addMany([new Client(config).randomize(1)]).accepted, 1);
  assert.equal(aggregator.n, 1);
});
