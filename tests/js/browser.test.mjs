// The no-bundler ES module build in headless Chromium: in a page and in a
// module Worker, with and without a strict Content-Security-Policy.
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
