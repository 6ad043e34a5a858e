// The accountant from JS (the full module, `localdp`): compose and shuffle
// return the same objects, number for number, as `localdp privacy compose`
// and `localdp privacy shuffle`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compose, shuffle } from 'localdp';
import { cli } from './helpers.mjs';

const privacy = (...args) => JSON.parse(cli(['privacy', ...args]));

test('compose equals privacy compose', () => {
  for (const [reports, delta, args] of [
    [[{ epsilon: 0.1, count: 365 }], 1e-6, ['0.1x365']],
    [[{ epsilon: 0.5, count: 10 }, { epsilon: 0.1, count: 100 }], 1e-6, ['0.5x10', '0.1x100']],
    [[{ epsilon: 1, count: 5 }, { epsilon: 0.3, count: 4 }, { epsilon: 0.7, count: 3 }], 1e-3, ['1x5', '0.3x4', '0.7x3']],
  ]) {
    assert.deepEqual(compose(reports, delta), privacy('compose', '--delta', String(delta), ...args));
  }
  const year = compose([{ epsilon: 0.1, count: 365 }], 1e-6);
  assert.ok(year.epsilon > 10.3138 && year.epsilon < 10.3139 && year.sum >= 36.5, JSON.stringify(year));
});

test('shuffle equals privacy shuffle, for any randomizer and for grr', () => {
  const generic = shuffle({ epsilon: 4, n: 100000, delta: 1e-6 });
  assert.deepEqual(generic, privacy('shuffle', '--epsilon', '4', '--n', '100000', '--delta', '1e-6'));
  assert.ok(generic.epsilon >= 0.1675 && generic.epsilon <= 0.1728 && Math.abs(generic.closed_form - 0.5378) < 5e-5);
  const grr = shuffle({ epsilon: 4, n: 100000, delta: 1e-6, protocol: 'grr', domain: 16 });
  assert.deepEqual(grr, privacy('shuffle', '--epsilon', '4', '--n', '100000', '--delta', '1e-6', '--protocol', 'grr', '--domain', '16'));
  assert.ok(grr.epsilon < generic.epsilon && grr.lower <= grr.epsilon, JSON.stringify(grr));
  assert.deepEqual(shuffle({ epsilon: 4, n: 1000, delta: 1e-6 }), privacy('shuffle', '--epsilon', '4', '--n', '1000', '--delta', '1e-6'));
  assert.equal(shuffle({ epsilon: 4, n: 1000, delta: 1e-6 }).closed_form, null);
});

test('bad input throws typed errors', () => {
  const ranged = (parameter) => (e) => e instanceof RangeError && e.parameter === parameter;
  assert.throws(() => compose([{ epsilon: 0.1, count: 0 }], 1e-6), ranged('count'));
  assert.throws(() => compose([{ epsilon: -1, count: 3 }], 1e-6), ranged('epsilon'));
  assert.throws(() => compose([{ epsilon: 0.1, count: 3 }], 1), ranged('delta'));
  assert.throws(() => compose([], 1e-6), ranged('reports'));
  assert.throws(() => compose([{ epsilon: 0.1, count: 1.5 }], 1e-6), TypeError);
  assert.throws(() => compose([[0.1, 3]], 1e-6), TypeError);
  assert.throws(() => compose({ epsilon: 0.1, count: 3 }, 1e-6), TypeError);
  assert.throws(() => shuffle({ epsilon: 4, n: 100, delta: NaN }), ranged('delta'));
  assert.throws(() => shuffle({ epsilon: 4, n: 0, delta: 1e-6 }), ranged('n'));
  assert.throws(() => shuffle({ epsilon: 4, n: 100, delta: 1e-6, protocol: 'grr', domain: 1 }), ranged('domain'));
  assert.throws(() => shuffle({ epsilon: 4, n: 100, delta: 1e-6, protocol: 'grr' }), TypeError);
  // A domain without a protocol is refused, as by `privacy shuffle --domain 16` (which needs --protocol).
  assert.throws(() => shuffle({ epsilon: 4, n: 100, delta: 1e-6, domain: 16 }), TypeError);
  assert.throws(() => shuffle({ epsilon: 4, n: 100, delta: 1e-6, protocol: 'oue', domain: 4 }), TypeError);
  assert.throws(() => shuffle(4, 100, 1e-6), TypeError);
});
