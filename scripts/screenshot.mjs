// Remakes docs/dashboard.png, the README's picture of the demo: a scratch
// collector, 20,000 users simulated in the page, the dashboard in Chromium.
// Needs the release CLI and dist/ (npm start builds both).
//   node scripts/screenshot.mjs [--users 20000] [--out docs/dashboard.png]
// With --shuffle N (docs/shuffled-dashboard.png), the page's report posts
// go through a shuffler (`localdp shuffle --batch N`, and after 2 s batches
// of at least 1,000) to the collector,
// as a page's would when a shuffler stands between them, and the
// dashboard shows each metric's central (ε, δ) beside its local ε.
//   node scripts/screenshot.mjs --shuffle 5000 --out docs/shuffled-dashboard.png
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const root = new URL('..', import.meta.url).pathname;
const out = arg('out', join(root, 'docs/dashboard.png'));
const dir = mkdtempSync(join(tmpdir(), 'localdp-screenshot-'));
const bin = arg('bin', join(root, 'target/release/localdp'));
const batch = arg('shuffle', null);
/** Starts `localdp args`; the process and the URL it prints first. */
const start = async (args) => {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  return { child, url };
};
const { child: server, url } = await start(
  ['serve', '--port', '0', '--db', join(dir, 'demo.sqlite'), '--www', join(root, 'www'), '--pkg', join(root, 'dist/web')]);
const shuffler = batch === null ? null
  // What is held after the simulation (less than a batch) goes after 2 s.
  : await start(['shuffle', '--port', '0', '--forward', url, '--batch', batch, '--max-wait', '2s', '--min-batch', '1000',
    '--db', join(dir, 'shuffle.sqlite')]);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  if (shuffler) {
    // Every report post goes to the shuffler instead, with its answer.
    await page.route('**/api/metrics/*/reports', async (route) => {
      const path = new URL(route.request().url()).pathname;
      await route.fulfill({ response: await route.fetch({ url: shuffler.url + path }) });
    });
  }
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  await page.selectOption('#users', arg('users', '20000'));
  await page.click('#simulate');
  await page.waitForSelector('#sim-status[data-state="done"]', { timeout: 300000 });
  await page.waitForFunction(() => !document.querySelector('.card .empty'), null, { timeout: 120000 });
  if (shuffler) {
    // The batches reach the collector after the simulation: wait for a
    // refresh that shows every simulated user's report forwarded, in
    // shuffled batches, with the central ε.
    await page.waitForFunction(() => [...document.querySelectorAll('.card')].every((card) => {
      const n = card.querySelector('.n')?.textContent;
      return card.querySelector('.privacy .central')?.textContent.includes(` ${n} reports`)
        && card.querySelector('.note').textContent.includes(`the ${n} users`);
    }), null, { timeout: 120000 });
  }
  await page.locator('#dashboard').screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  server.kill('SIGTERM');
  shuffler?.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
