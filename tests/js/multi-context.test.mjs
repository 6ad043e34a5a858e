// One device across contexts, in headless Chromium: two pages of one origin
// and a module Worker open `Client.open` (IndexedDB) with the same memoized,
// budgeted config from `localdp/client/web`, and randomize 1,000 values each
// at the same time. Exactly one permanent response per value across all of
// them, and the values that got one cost no more than the budget.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve, CHROMIUM } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(fileURLToPath(import.meta.resolve('localdp/package.json')));
const mounts = { '/': join(here, 'fixtures/contexts'), '/pkg/': packageDir };
const moduleUrl = `/pkg/${relative(packageDir, fileURLToPath(import.meta.resolve('localdp/client/web')))}`;

// GRR over 64 values, memoized: each value has one permanent response. The
// budget pays for five values at ε = 1; eight are asked for.
const CONFIG = { protocol: 'grr', epsilon: 1, domain: 64, memoize: true, budget: { epsilon: 5, window: '1d' } };
const VALUES = [0, 7, 13, 21, 34, 42, 55, 63];
const PER_CONTEXT = 1000;

let browser;
before(async () => {
  browser = await chromium.launch(CHROMIUM);
});
after(() => browser?.close());

test('two pages and a Worker randomizing at once are one device', async () => {
  const server = await serve(mounts);
  const context = await browser.newContext(); // one profile: one IndexedDB, one set of Web Locks
  const errors = [];
  try {
    const pages = [await context.newPage(), await context.newPage()];
    for (const page of pages) {
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${server.url}/`);
    }
    // Each context opens its client before any randomizes, so that the runs overlap.
    const opened = await Promise.all(pages.map((page) => page.evaluate(async ([url, config]) => {
      window.context = await import('/context.mjs');
      return window.context.open(url, config);
    }, [moduleUrl, CONFIG])));
    opened.push(await pages[0].evaluate(async ([url, config]) => {
      const worker = new Worker('/context.mjs', { type: 'module' });
      window.callWorker = (...message) => new Promise((resolve, reject) => {
        worker.onmessage = ({ data }) => (data.error ? reject(new Error(data.error)) : resolve(data.result));
        worker.onerror = (e) => reject(new Error(e.message));
        worker.postMessage(message);
      });
      return window.callWorker('open', url, config);
    }, [moduleUrl, CONFIG]));
    assert.deepEqual(opened, Array(3).fill({ persistent: true, resets: 0 }));

    const runs = await Promise.all([
      ...pages.map((page) => page.evaluate(([values, n]) => window.context.run(values, n), [VALUES, PER_CONTEXT])),
      pages[0].evaluate(([values, n]) => window.callWorker('run', values, n), [VALUES, PER_CONTEXT]),
    ]);

    const responses = new Map(VALUES.map((v) => [v, new Set()]));
    let refused = 0;
    for (const { outcomes, spent } of runs) {
      assert.equal(outcomes.length, PER_CONTEXT);
      assert.ok(spent <= CONFIG.budget.epsilon, `spent ${spent}`);
      for (const [value, outcome] of outcomes) {
        if (typeof outcome === 'number') responses.get(value).add(outcome);
        else {
          assert.equal(outcome, 'PrivacyBudgetExceeded');
          refused += 1;
        }
      }
    }
    const reported = [...responses.values()].filter((set) => set.size > 0);
    for (const [value, set] of responses) assert.ok(set.size <= 1, `value ${value} got ${set.size} permanent responses`);
    assert.equal(reported.length * CONFIG.epsilon, CONFIG.budget.epsilon, 'the budget paid for exactly five values');
    assert.equal(refused, 3 * PER_CONTEXT * (VALUES.length - reported.length) / VALUES.length, 'every other value was refused everywhere');
    const spentNow = [
      ...await Promise.all(pages.map((page) => page.evaluate(() => window.context.spent()))),
      await pages[0].evaluate(() => window.callWorker('spent')),
    ];
    assert.deepEqual(spentNow, [5, 5, 5], 'one ledger, read alike by every context');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await server.close();
  }
});
