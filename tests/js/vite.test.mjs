// Tiny Vite apps that import the package with a plain import build with no
// Vite configuration, and the built apps run in Chromium: one with the full
// module (`localdp`), one with the client alone (`localdp/client`), whose
// build carries only the client's wasm modules and whose page fetches only
// the module of its config's family, a module worker (the same) that must
// answer the first message it is sent (no entry awaits at top level: a
// worker in Vite's default format, iife, refused to build with
// [INVALID_TLA_FORMAT], and one in format es lost its first message), and
// the README's web quick start served by the collector, whose report must
// arrive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { chromium } from 'playwright-core';
import { serve, startCollector, stopCollector, until, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));

/** The package's client wasm modules: the one of every family, and each family's. */
const clientModules = new Map([
  ['every family', join(packageDir, 'dist/client/web/localdp_client_bg.wasm')],
  ...['grr', 'frequency', 'numeric', 'rappor', 'heavy', 'distribution', 'key_value', 'marginals'].map((f) => [f, join(packageDir, `dist/client/web/families/${f}/localdp_client_bg.wasm`)]),
].map(([name, file]) => [readFileSync(file).toString('base64'), name]));

/** Which client module a built asset is (by its bytes: Vite copies them as they are), or undefined. */
const clientModule = (file) => clientModules.get(readFileSync(file).toString('base64'));

/**
 * Builds fixtures/NAME with Vite (with `config` added: none unless a test
 * says so); returns the app's folder (its build in dist/).
 */
async function buildApp(name, config = {}) {
  // The app lives beside this file's node_modules, where localdp is installed.
  const app = mkdtempSync(join(here, `${name}-`));
  cpSync(join(here, 'fixtures', name), app, { recursive: true });
  await build({ root: app, logLevel: 'warn', build: { outDir: join(app, 'dist') }, ...config });
  return app;
}

/**
 * Builds fixtures/NAME (see buildApp), serves it, and returns `window.result`,
 * the wasm the build shipped and the wasm the page (and its workers) fetched,
 * each named as a client module where it is one.
 */
async function buildAndRun(name, config = {}) {
  const app = await buildApp(name, config);
  const server = await serve({ '/': join(app, 'dist') });
  const browser = await chromium.launch(CHROMIUM);
  try {
    const page = await browser.newPage();
    const errors = [];
    const wasm = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('requestfinished', (r) => {
      const path = new URL(r.url()).pathname;
      if (path.endsWith('.wasm')) wasm.push(path);
    });
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.result, null, { timeout: 20000 });
    assert.deepEqual(errors, []);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
    const fetched = wasm.map((path) => clientModule(join(app, 'dist', path)) ?? path);
    const assets = readdirSync(join(app, 'dist/assets'));
    const shipped = assets.filter((a) => a.endsWith('.wasm')).map((a) => clientModule(join(app, 'dist/assets', a)) ?? a).sort();
    return { result: await page.evaluate(() => window.result), shipped, fetched };
  } finally {
    await browser.close();
    await server.close();
  }
}

test('a Vite build imports localdp and runs in Chromium', async () => {
  const { result } = await buildAndRun('vite-app');
  assert.deepEqual(result, {
    n: 2000,
    protocol: 'oue',
    // Before `await init()`, the client says what to call.
    early: 'localdp is not initialized: call `await init()` (the default export) first, or create the client with `await Client.open(config)`',
  });
});

test('a Vite build imports localdp/client, ships only client modules, and the page fetches its family\'s alone', async () => {
  const { result, shipped, fetched } = await buildAndRun('vite-client');
  assert.deepEqual(result, { protocol: 'olh', again: true });
  assert.deepEqual(shipped, [...clientModules.values()].sort());
  assert.deepEqual(fetched, ['frequency']);
});

test("the README's web quick start, built by Vite and served by the collector, reports", async () => {
  const app = await buildApp('quickstart-web');
  const scratch = mkdtempSync(join(tmpdir(), 'localdp-quickstart-'));
  const metrics = fileURLToPath(new URL('../../www/metrics.json', import.meta.url));
  const collector = await startCollector(['--www', join(app, 'dist'), '--metrics', metrics, '--db', join(scratch, 'db.sqlite')]);
  const browser = await chromium.launch(CHROMIUM);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${collector.url}/`);
    const metric = await until(async () => {
      const body = await (await fetch(`${collector.url}/api/metrics/browser`)).json();
      return body.n > 0 && body;
    }, 'the report to arrive');
    assert.equal(metric.n, 1);
    assert.ok(Object.values(metric.rejected).every((count) => count === 0), JSON.stringify(metric.rejected));
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await stopCollector(collector);
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('a Vite module worker built with no configuration answers its first message', async () => {
  const { result, shipped, fetched } = await buildAndRun('vite-worker');
  assert.deepEqual(result, { protocol: 'olh', first: true });
  assert.deepEqual(shipped, [...clientModules.values()].sort());
  assert.deepEqual(fetched, ['frequency']);
});

test('a Vite module worker in format es answers its first message', async () => {
  const { result } = await buildAndRun('vite-worker', { worker: { format: 'es' } });
  assert.deepEqual(result, { protocol: 'olh', first: true });
});
