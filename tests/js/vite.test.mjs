// Tiny Vite apps that import the package with a plain import build, and the
// built apps run in Chromium: one with the full module (`localdp`), one with
// the client module alone (`localdp/client`), whose build carries only the
// client's wasm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { chromium } from 'playwright-core';
import { serve, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** Builds fixtures/NAME, serves it, and returns `window.result` and the built assets. */
async function buildAndRun(name) {
  // The app lives beside this file's node_modules, where localdp is installed.
  const app = mkdtempSync(join(here, `${name}-`));
  cpSync(join(here, 'fixtures', name), app, { recursive: true });
  await build({ root: app, logLevel: 'warn', build: { outDir: join(app, 'dist') } });
  const server = await serve({ '/': join(app, 'dist') });
  const browser = await chromium.launch(CHROMIUM);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.result, null, { timeout: 20000 });
    assert.deepEqual(errors, []);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
    return { result: await page.evaluate(() => window.result), assets: readdirSync(join(app, 'dist/assets')) };
  } finally {
    await browser.close();
    await server.close();
  }
}

test('a Vite build imports localdp and runs in Chromium', async () => {
  const { result } = await buildAndRun('vite-app');
  assert.deepEqual(result, { n: 2000, protocol: 'oue' });
});

test('a Vite build imports localdp/client and ships only the client module', async () => {
  const { result, assets } = await buildAndRun('vite-client');
  assert.deepEqual(result, { protocol: 'olh', again: true });
  const wasm = assets.filter((a) => a.endsWith('.wasm'));
  assert.equal(wasm.length, 1, assets.join(' '));
  assert.match(wasm[0], /^localdp_client_bg/);
});
