// The no-bundler ES module builds in headless Chromium: the full module in a
// page and in a module Worker, with and without a strict
// Content-Security-Policy, and the client (`localdp/client/web`) in a bare
// page under that policy, fetching the wasm of its config's family alone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));
const mounts = { '/': join(here, 'fixtures/page'), '/localdp/': join(packageDir, 'dist') };
let browser;

before(async () => {
  browser = await chromium.launch(CHROMIUM);
  mkdirSync(ARTIFACTS, { recursive: true });
});
after(() => browser?.close());

const policies = {
  'no CSP': {},
  "CSP script-src 'self' 'wasm-unsafe-eval'": {
    'content-security-policy': "script-src 'self' 'wasm-unsafe-eval'",
  },
};

for (const [name, headers] of Object.entries(policies)) {
  test(`page and worker randomize (${name})`, async () => {
    const server = await serve(mounts, headers);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await page.goto(`${server.url}/`);
      await page.waitForFunction(() => (window.pageReport && window.workerReport) || window.failure, null, { timeout: 20000 });
      assert.equal(await page.evaluate(() => window.failure), undefined);
      for (const report of [await page.evaluate(() => window.pageReport), await page.evaluate(() => window.workerReport)]) {
        assert.equal(report.version, 1);
        assert.ok(['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss'].includes(report.protocol));
        assert.equal(report.epsilon, 1);
        assert.match(report.domain, /^[0-9a-f]{16}$/);
        assert.ok('value' in report || 'bits' in report);
      }
      assert.deepEqual(errors, []);
      await page.screenshot({ path: join(ARTIFACTS, `page-${headers['content-security-policy'] ? 'csp' : 'plain'}.png`), fullPage: true });
    } finally {
      await page.close();
      await server.close();
    }
  });
}

test("localdp/client/web in a bare page (CSP script-src 'self' 'wasm-unsafe-eval')", async () => {
  const server = await serve({ '/': join(here, 'fixtures/client-page'), '/localdp/': join(packageDir, 'dist') }, policies["CSP script-src 'self' 'wasm-unsafe-eval'"]);
  const page = await browser.newPage();
  const errors = [];
  const loaded = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfinished', (r) => loaded.push(new URL(r.url()).pathname));
  try {
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.result || window.failure, null, { timeout: 20000 });
    assert.equal(await page.evaluate(() => window.failure), undefined);
    const { report, persistent, again, numeric } = await page.evaluate(() => window.result);
    assert.equal(report.version, 1);
    assert.ok(['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'hrr', 'ss'].includes(report.protocol));
    assert.match(report.domain, /^[0-9a-f]{16}$/);
    assert.equal(persistent, true);
    assert.equal(again, true, 'memoized in IndexedDB');
    assert.equal(numeric, 'duchi', 'new Client after Client.load');
    assert.deepEqual(errors, []);
    // Only the client's files, each once, and of the wasm only the modules
    // of the two families the page uses: no full module, no module of every
    // family.
    const fromPackage = loaded.filter((p) => p.startsWith('/localdp/')).sort();
    assert.deepEqual(fromPackage, [
      '/localdp/client/web/bindings.js',
      '/localdp/client/web/families/frequency/bindings.js',
      '/localdp/client/web/families/frequency/localdp_client_bg.wasm',
      '/localdp/client/web/families/numeric/bindings.js',
      '/localdp/client/web/families/numeric/localdp_client_bg.wasm',
      '/localdp/client/web/localdp.js',
      '/localdp/client/web/messages.mjs',
    ]);
    await page.screenshot({ path: join(ARTIFACTS, 'client-page-csp.png'), fullPage: true });
  } finally {
    await page.close();
    await server.close();
  }
});

/**
 * Opens fixtures/NAME (with `query`) beside the package's dist/ in a fresh
 * page, `block` a URL pattern to abort, and gives its `window.result` (no
 * `window.failure`, no page error) and the wasm it fetched, in order.
 */
async function fixture(name, { query = '', block } = {}) {
  const server = await serve({ '/': join(here, 'fixtures', name), '/localdp/': join(packageDir, 'dist') });
  const page = await browser.newPage();
  const errors = [];
  const wasm = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfinished', (r) => r.url().endsWith('.wasm') && wasm.push(new URL(r.url()).pathname));
  if (block) await page.route(block, (route) => route.abort());
  try {
    await page.goto(`${server.url}/${query}`);
    await page.waitForFunction(() => window.result || window.failure, null, { timeout: 20000 });
    assert.equal(await page.evaluate(() => window.failure), undefined);
    const result = await page.evaluate(() => window.result);
    assert.deepEqual(errors, []);
    return { result, wasm };
  } finally {
    await page.close();
    await server.close();
  }
}

test('a state of an earlier release (JSON) is converted by the module of every family, fetched for it alone', async () => {
  const { result, wasm } = await fixture('earlier-state');
  for (const entry of ['family', 'web']) {
    const { spent, resets, report, after, bytes, json, corrupt } = result[entry];
    assert.deepEqual({ spent, resets, after, bytes, json }, { spent: 2, resets: 0, after: 2, bytes: 'LDPC', json: true }, entry);
    assert.deepEqual(corrupt, [1, 0], `${entry}: the base64 of "{}" under the bytes' key is a counted reset`);
    assert.deepEqual(report, { version: 1, protocol: 'grr', epsilon: 1, domain: 'e554b29b4737a22d', value: 0 }, `${entry}: the memo is sent again`);
  }
  // The family's module, then the module of every family, to convert the state (once: the web entry reuses it).
  assert.deepEqual(wasm, ['/localdp/client/web/families/grr/localdp_client_bg.wasm', '/localdp/client/web/localdp_client_bg.wasm']);
});

test('a budget with "delta" is charged by the module of every family, fetched instead of the family\'s', async () => {
  const { result, wasm } = await fixture('composed-budget');
  for (const entry of ['family', 'web']) {
    const { spent, protocol, again, plain } = result[entry];
    assert.equal(protocol, 'grr', entry);
    // 20 reports at ε 0.1 sum to 2: composed at δ 1e-6 they cost less.
    assert.ok(spent > 0.1 && spent < 2, `${entry}: spent ${spent}`);
    assert.ok(again > 0 && again <= 0.1, `${entry}: new Client after Client.open spent ${again}`);
    assert.equal(plain, 'grr', `${entry}: new Client of a config without "delta" after Client.open`);
  }
  assert.equal(result.family.spent, result.web.spent);
  // The module of every family alone, once: the family entry imports the web entry's module.
  assert.deepEqual(wasm, ['/localdp/client/web/localdp_client_bg.wasm']);
});

test('where the module of every family cannot be imported, a family\'s entry refuses a budget with "delta" (313, with the cause)', async () => {
  // As a service worker refuses import(): the module of every family's entry does not load.
  const { result } = await fixture('composed-budget', { query: '?blocked', block: '**/localdp/client/web/localdp.js' });
  const { sync, code, message, cause, opened } = result;
  assert.equal(opened, undefined, 'Client.open refused');
  assert.equal(sync, 313, 'new Client, once the family\'s module is instantiated');
  assert.equal(code, 313);
  assert.match(message, /^a budget with "delta" is charged by the module of every family/);
  assert.equal(cause, true, 'the failed import is the cause');
});
