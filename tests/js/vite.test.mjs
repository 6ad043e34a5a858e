// A tiny Vite app that imports the package with a plain import builds, and
// the built app runs in Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { chromium } from 'playwright-core';
import { serve, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));

test('a Vite build imports localdp and runs in Chromium', async () => {
  // The app lives beside this file's node_modules, where localdp is installed.
  const app = mkdtempSync(join(here, 'vite-app-'));
  cpSync(join(here, 'fixtures/vite-app'), app, { recursive: true });
  await build({ root: app, logLevel: 'warn', build: { outDir: join(app, 'dist') } });
  const server = await serve({ '/': join(app, 'dist') });
  const browser = await chromium.launch(CHROMIUM);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.result, null, { timeout: 20000 });
    assert.deepEqual(await page.evaluate(() => window.result), { n: 2000, protocol: 'oue' });
    assert.deepEqual(errors, []);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'vite-app.png') });
  } finally {
    await browser.close();
    await server.close();
  }
});
