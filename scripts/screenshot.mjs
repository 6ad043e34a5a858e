// Remakes docs/dashboard.png, the README's picture of the demo: a scratch
// collector, 20,000 users simulated in the page, the dashboard in Chromium;
// with --card planner, docs/planner.png, the planner card (no users needed).
// Needs the release CLI (or LOCALDP_CLI) and dist/ (npm start builds both).
//   node scripts/screenshot.mjs [--card dashboard|planner] [--users 20000] [--out docs/dashboard.png]
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
const card = arg('card', 'dashboard');
const out = arg('out', join(root, `docs/${card}.png`));
const dir = mkdtempSync(join(tmpdir(), 'localdp-screenshot-'));
const server = spawn(process.env.LOCALDP_CLI ?? join(root, 'target/release/localdp'),
  ['serve', '--port', '0', '--db', join(dir, 'demo.sqlite'), '--www', join(root, 'www'), '--pkg', join(root, 'dist/web')],
  { stdio: ['ignore', 'pipe', 'ignore'] });
const url = await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  if (card === 'planner') {
    await page.selectOption('#plan-metric', 'feature');
    await page.waitForFunction(() => document.body.dataset.planned === 'feature:2:10000');
    await page.locator('#planner').screenshot({ path: out });
  } else {
    await page.selectOption('#users', arg('users', '20000'));
    await page.click('#simulate');
    await page.waitForSelector('#sim-status[data-state="done"]', { timeout: 300000 });
    await page.waitForFunction(() => !document.querySelector('.card .empty'));
    await page.locator('#dashboard').screenshot({ path: out });
  }
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
