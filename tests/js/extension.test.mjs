// The example Manifest V3 extension (examples/extension) loaded unpacked in
// headless Chromium: its module service worker randomizes with the
// package's client build (the wasm of its metric's family alone, under
// 'wasm-unsafe-eval'), keeps its state in
// chrome.storage.local, and posts the report to a local collector, where
// it is counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM, startCollector, stopCollector, until } from './helpers.mjs';

// The example as the package ships it (scripts/test-js.sh installs the packed tarball here).
const setup = fileURLToPath(new URL('./node_modules/localdp/examples/extension/setup.mjs', import.meta.url));

test("the extension's service worker reports to the collector", async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'localdp-extension-'));
  const extension = join(scratch, 'extension');
  const profile = join(scratch, 'profile');
  let collector;
  let context;
  try {
    collector = await startCollector(['--db', join(scratch, 'db.sqlite'), '--metrics', join(dirname(setup), 'metrics.json')]);
    // The example as a user sets it up: copied out of the installed package
    // with its client build and the collector's address; the package's
    // folder is left as it was.
    execFileSync(process.execPath, [setup, extension, '--collector', collector.url], { cwd: scratch });
    assert.equal(JSON.parse(readFileSync(join(extension, 'settings.json'), 'utf8')).collector, collector.url);
    // It ships the wasm of the one family its metric names (GRR's own), and no other.
    const shipped = readdirSync(extension, { recursive: true }).filter((f) => f.endsWith('.wasm'));
    assert.deepEqual(shipped, ['localdp/dist/client/web/families/grr/localdp_client_bg.wasm']);
    assert.deepEqual(readdirSync(dirname(setup)).sort(), ['README.md', 'background.js', 'manifest.json', 'metrics.json', 'setup.mjs']);

    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM.executablePath,
      headless: true,
      args: [...CHROMIUM.args, `--disable-extensions-except=${extension}`, `--load-extension=${extension}`],
    });
    const worker = context.serviceWorkers()[0] ?? await context.waitForEvent('serviceworker');
    assert.match(worker.url(), /^chrome-extension:\/\/[a-z]{32}\/background\.js$/);

    const metric = await until(async () => {
      const response = await fetch(`${collector.url}/api/metrics/ui_language`);
      const body = await response.json();
      return body.n > 0 && body;
    }, 'the report to arrive');
    assert.equal(metric.n, 1);
    assert.ok(Object.values(metric.rejected).every((count) => count === 0), JSON.stringify(metric.rejected));
    const [line, ...rest] = (await (await fetch(`${collector.url}/api/metrics/ui_language/export`)).text()).trim().split('\n');
    assert.deepEqual(rest, []);
    const report = JSON.parse(line);
    assert.equal(report.protocol, 'grr');
    assert.equal(report.epsilon, 1);

    // The state lives in chrome.storage.local: a secret and a ledger, no raw value.
    const stored = await worker.evaluate(() => chrome.storage.local.get(null));
    const language = await worker.evaluate(() => navigator.language.split('-')[0]);
    assert.match(stored['localdp:secret'], /^[0-9a-f]{64}$/);
    const states = Object.keys(stored).filter((key) => key.startsWith('localdp:state-bytes:'));
    assert.equal(states.length, 1);
    assert.ok(!Buffer.from(stored[states[0]], 'base64').toString('latin1').includes(`"${language}"`), 'the state holds no raw value');
  } finally {
    await context?.close();
    await stopCollector(collector);
    rmSync(scratch, { recursive: true, force: true });
  }
});
