// Remakes the docs' pictures in Chromium, each from a scratch collector:
// - docs/dashboard.png, the demo: 20,000 users simulated in the page;
// - target/artifacts/operator-dashboard-demo.png (--operator), the
//   operator's dashboard at /dashboard: the demo's metrics file, seeded
//   reports from the CLI for each metric (one kept below the planner's
//   floor), a bad report, a request limit run into, and the login with a
//   token. (docs/operator-dashboard.png, one card of every family, is the
//   dashboard test's target/artifacts/operator-dashboard.png, copied.)
// Needs the CLI ($LOCALDP_CLI, else the release build) and, for the demo, dist/.
//   node scripts/screenshot.mjs [--users 20000] [--out docs/dashboard.png]
//   node scripts/screenshot.mjs --operator [--out target/artifacts/operator-dashboard-demo.png]
// - docs/planner.png (--planner), the demo's planner card (no users needed).
//   node scripts/screenshot.mjs --planner [--out docs/planner.png]
// With --shuffle N (docs/shuffled-dashboard.png), the operator's dashboard
// after the same reports went through a shuffler (`localdp shuffle --batch
// N`, and after 2 s batches of at least 1,000, with a shuffler token),
// as a page's would when a shuffler stands between them: each metric's
// central (ε, δ) beside its local ε.
//   node scripts/screenshot.mjs --operator --shuffle 5000 --out docs/shuffled-dashboard.png
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const operator = process.argv.includes('--operator');
const planner = process.argv.includes('--planner');
const root = new URL('..', import.meta.url).pathname;
const cli = process.env.LOCALDP_CLI ?? join(root, 'target/release/localdp');
const batch = arg('shuffle', null);
if (batch !== null && !operator) throw new Error('--shuffle goes with --operator (the central ε needs a collector with tokens)');
const out = arg('out', operator && !batch
  ? join(root, 'target/artifacts/operator-dashboard-demo.png')
  : join(root, `docs/${batch ? 'shuffled-dashboard' : planner ? 'planner' : 'dashboard'}.png`));
const dir = mkdtempSync(join(tmpdir(), 'localdp-screenshot-'));
const metrics = join(root, 'www/metrics.json');
const TOKEN = 'screenshot-token-0123456789abcdef';
writeFileSync(join(dir, 'tokens'), `${TOKEN}\n`);
// The shuffler's own token (the collector's --shuffler-token-file): readers' tokens post no batch.
writeFileSync(join(dir, 'shuffler-tokens'), 'screenshot-shuffler-0123456789abcdef\n');
/** Starts `localdp args`; the process and the URL it prints first. */
const start = async (args) => {
  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  return { child, url };
};
const { child: server, url } = await start(['serve', '--port', '0', '--db', join(dir, 'demo.sqlite'), ...(operator
  ? ['--metrics', metrics, '--www', join(dir, 'no-demo'), '--token-file', join(dir, 'tokens'), '--requests-per-minute', batch ? '600' : '12', '--max-body', String(16 << 20),
    ...(batch ? ['--shuffler-token-file', join(dir, 'shuffler-tokens')] : [])]
  : ['--www', join(root, 'www'), '--pkg', join(root, 'dist/web')])]);
const shuffler = batch === null ? null
  // What is held after the simulation (less than a batch) goes after 2 s.
  : await start(['shuffle', '--port', '0', '--forward', url, '--batch', batch, '--max-wait', '2s', '--min-batch', '1000',
    '--token-file', join(dir, 'shuffler-tokens'), '--max-body', String(16 << 20), '--db', join(dir, 'shuffle.sqlite')]);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});

/** The demo's dashboard after `--users` users simulated in the page. */
async function demo(page) {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  const users = arg('users', '20000');
  await page.selectOption('#users', users);
  await page.click('#simulate');
  await page.waitForSelector('#sim-status[data-state="done"]', { timeout: 300000 });
  // The refresh after the last batch: every card's n is every user (a
  // refresh during the simulation leaves smaller ones meanwhile).
  await page.waitForFunction((users) => [...document.querySelectorAll('.card .n')]
    .every((n) => n.textContent.replaceAll(',', '') === users), users, { timeout: 120000 });
  await page.locator('#dashboard').screenshot({ path: out });
}

/** The demo's planner card, for its "feature" metric. */
async function plannerCard(page) {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  await page.selectOption('#plan-metric', 'feature');
  await page.waitForFunction(() => document.body.dataset.planned === 'feature:2:10000');
  await page.locator('#planner').screenshot({ path: out });
}

/** `count` values in a fixed cycle through `weighted` ([value, weight] pairs). */
function cycle(weighted, count) {
  const pattern = weighted.flatMap(([value, weight]) => new Array(weight).fill(value));
  return Array.from({ length: count }, (_, i) => pattern[i % pattern.length]);
}

/** Posts to the collector, or through the shuffler with --shuffle. */
async function post(name, body) {
  return fetch(`${shuffler?.url ?? url}/api/metrics/${name}/reports`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

/** The reports posted per metric. */
const posted = {};

/** Seeded reports of `values` for metric `name`, posted in one batch. */
async function collect(name, values, seed) {
  posted[name] = values.length;
  const { config } = (await (await fetch(`${url}/api/metrics/${name}`)).json());
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const lines = execFileSync(cli, ['randomize', '--config', join(dir, 'config.json'), '--seed', String(seed)],
    { input: values.join('\n') + '\n', encoding: 'utf8', maxBuffer: 1 << 28 }).trim().split('\n');
  return post(name, `[${lines.join(',')}]`);
}

/** The operator's dashboard over the demo's metrics, with a little of everything to show. */
async function operatorDashboard(page) {
  await collect('browser', cycle([['Chrome', 9], ['Safari', 5], ['Firefox', 3], ['Edge', 2], ['Samsung Internet', 1], ['Other', 1]], 20000), 1);
  await collect('feature', cycle([['Search', 5], ['Dashboards', 3], ['Reports', 2], ['API', 1]], 300), 2);
  await collect('load_time', cycle([[350, 2], [600, 5], [800, 6], [1100, 4], [1600, 2], [2600, 1], [4200, 1]], 20000), 3);
  await collect('referrer', cycle([['/', 8], ['/pricing', 4], ['/docs', 3], ['/blog/ldp', 2], ['/signup', 1]], 20000), 4);
  const device = (browser, os, kind) => JSON.stringify({ browser, os, device: kind });
  await collect('device', cycle([[device('Chrome', 'Windows', 'desktop'), 6], [device('Safari', 'macOS', 'desktop'), 3],
    [device('Chrome', 'Android', 'mobile'), 4], [device('Safari', 'iOS', 'mobile'), 4], [device('Firefox', 'Linux', 'desktop'), 1],
    [device('Edge', 'Windows', 'desktop'), 2]], 20000), 5);
  // Above the key-value metric's floor (about 29,000 users).
  await collect('features_used', cycle([['{"Search":15,"Dashboards":40}', 4], ['{"Search":25,"Reports":60,"Export":10}', 2],
    ['{"Dashboards":30,"Alerts":5}', 2], ['{"Search":10,"Sharing":20}', 1]], 40000), 6);
  await post('browser', '[{"hello":"world"}]');
  for (let i = 0; i < 100 && (await post('feature', '[]')).status !== 429; i++);
  await page.goto(`${url}/dashboard`);
  await page.waitForSelector('body[data-state="login"]');
  await page.fill('#token', TOKEN);
  await page.click('#login button[type="submit"]');
  await page.waitForSelector('body[data-state="ready"]');
  if (shuffler) {
    // The batches reach the collector a moment later: refresh until every
    // metric shows all its reports and its central ε (none for fewer than
    // --min-batch, which the shuffler holds).
    const expected = Object.fromEntries(Object.entries(posted).map(([name, n]) => [name, n >= 1000 ? n : 0]));
    await page.waitForFunction((expected) => {
      document.querySelector('#refresh')?.click();
      return [...document.querySelectorAll('article.metric')].every((card) => {
        const n = Number(card.querySelector('dd.n')?.textContent.replaceAll(',', ''));
        return n === (expected[card.dataset.metric] ?? 0) && (n === 0 || card.querySelector('dd.central b'));
      });
    }, expected, { timeout: 120000, polling: 1000 });
  }
  await page.screenshot({ path: out, fullPage: true });
}

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await (operator ? operatorDashboard(page) : planner ? plannerCard(page) : demo(page));
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  server.kill('SIGTERM');
  shuffler?.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
