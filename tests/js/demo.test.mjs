// The demo (www/) served by the real collector (`localdp serve`), driven in
// headless Chromium: answer the survey and see exactly the report that left,
// simulate users, and watch the dashboard update; only reports ever leave the
// page, and nothing is fetched from anywhere but the collector. Screenshots
// (wide and phone) go to ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';
import { startCollector, stopCollector, until, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));
const REPORT_KEYS = new Set(['version', 'protocol', 'epsilon', 'domain', 'value', 'seed', 'bits', 'cohort', 'attributes', 'values']);
const PROTOCOLS = ['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss', 'duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean', 'pem', 'square_wave', 'hierarchical', 'pckv_grr', 'pckv_ue', 'marginals_oue', 'marginals_olh'];

let browser;
let server;
let scratch;

/** Starts `localdp serve` on a free port; resolves once it printed its URL. */
function startServer(db) {
  const www = process.env.LOCALDP_WWW;
  if (!process.env.LOCALDP_CLI || !www) throw new Error('LOCALDP_CLI and LOCALDP_WWW must point to the binary and to www/');
  return startCollector(['--db', db, '--www', www, '--pkg', join(packageDir, 'dist/web')]);
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  scratch = mkdtempSync(join(tmpdir(), 'localdp-demo-'));
  server = await startServer(join(scratch, 'demo.sqlite'));
  browser = await chromium.launch(CHROMIUM);
});

after(async () => {
  await browser?.close();
  if (server) {
    await stopCollector(server);
  }
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A page that records every request and every error. */
async function open(options) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const seen = { requests: [], posted: [], errors: [] };
  page.on('request', (request) => {
    seen.requests.push(request.url());
    if (request.method() === 'POST') seen.posted.push({ url: request.url(), body: request.postData() });
  });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') seen.errors.push(m.text()); });
  await page.goto(`${server.url}/`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
  return { context, page, seen };
}


function assertReport(report, metric) {
  assert.deepEqual(Object.keys(report).filter((k) => !REPORT_KEYS.has(k)), [], 'a report holds report fields only');
  assert.equal(report.version, 1);
  assert.ok(PROTOCOLS.includes(report.protocol), report.protocol);
  assert.equal(report.protocol, metric.protocol);
  assert.equal(report.epsilon, metric.epsilon);
  assert.match(report.domain, /^[0-9a-f]{16}$/);
  assert.ok('value' in report || 'bits' in report, 'a payload');
}

test('the demo: answer, see what left, simulate, watch the dashboard', async () => {
  const { metrics } = await (await fetch(`${server.url}/api/metrics`)).json();
  assert.deepEqual(metrics.map((m) => m.name), ['browser', 'feature', 'load_time', 'device', 'referrer', 'features_used']);
  const { context, page, seen } = await open({ viewport: { width: 1280, height: 900 } });
  try {
    // 1. Answer: pick values; the page shows the value that stays and the report that left.
    await page.check('fieldset[data-metric="browser"] input[value="2"]'); // Firefox
    await page.check('fieldset[data-metric="feature"] input[value="7"]'); // API
    await page.fill('input[name="load_time-0"]', '1234');
    await page.fill('input[name="referrer"]', '/pricing/team-plan'); // longer than max_length: truncated on the device
    await page.check('input[name="features_used-held-0"]'); // Search
    await page.fill('input[name="features_used-0"]', '25');
    await page.check('input[name="features_used-held-3"]'); // Export, at its default 10 minutes
    await page.selectOption('select[name="device-browser"]', 'Safari');
    await page.selectOption('select[name="device-os"]', 'iOS');
    await page.selectOption('select[name="device-device"]', 'mobile');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('.sent-row .reply').length === 6
      && [...document.querySelectorAll('.sent-row .reply')].every((r) => r.textContent.startsWith('Collector: accepted 1')), null, { timeout: 20000 });
    const sent = await page.$$eval('.sent-row', (rows) => rows.map((r) => ({
      metric: r.dataset.metric,
      stays: r.querySelector('.stays .value').textContent,
      report: r.querySelector('.report').textContent,
    })));
    const stays = Object.fromEntries(sent.map((s) => [s.metric, s.stays]));
    assert.deepEqual(stays, { browser: 'Firefox', feature: 'API', load_time: '1234 ms', device: 'Safari · iOS · mobile', referrer: '/pricing/team-plan', features_used: 'Search 25 min, Export 10 min' });
    for (const s of sent) {
      const metric = metrics.find((m) => m.name === s.metric);
      const report = JSON.parse(s.report);
      assertReport(report, metric);
      // What the page shows is exactly what it posted.
      const posted = seen.posted.find((p) => p.url.endsWith(`/api/metrics/${s.metric}/reports`));
      assert.equal(posted.body, s.report);
    }
    // The dashboard counts it.
    await page.waitForFunction(() => Number(document.querySelector('.card[data-metric="browser"] .n')?.textContent) >= 1, null, { timeout: 10000 });

    // 2. Simulate 5,000 users from the default (skewed) distributions.
    await page.selectOption('#users', '5000');
    await page.click('#simulate');
    await page.waitForSelector('#sim-status[data-state="done"]', { timeout: 180000 });
    assert.match(await page.textContent('#sim-status'), /Simulated 5,000 users/);
    // The page refreshes once more when the simulation ends, after any
    // refresh still under way (whose estimates may be a batch behind).
    for (const name of ['browser', 'feature', 'load_time', 'device', 'referrer', 'features_used']) {
      await page.waitForFunction((name) => Number(document.querySelector(`.card[data-metric="${name}"] .n`).textContent.replace(/,/g, '')) === 5001, name, { timeout: 10000 });
    }

    // 3. The dashboard: a bar, an interval and a truth marker per value; the numeric mean with its interval.
    for (const [name, values] of [['browser', 6], ['feature', 8]]) {
      const card = `.card[data-metric="${name}"]`;
      assert.equal(await page.locator(`${card} .bar`).count(), values);
      assert.equal(await page.locator(`${card} .ci`).count(), values);
      assert.equal(await page.locator(`${card} .truth`).count(), values);
      assert.match(await page.textContent(`${card} .meta`), /ε = \d/);
      // Posted straight to the collector, not through a shuffler: the local ε alone.
      assert.match(await page.textContent(`${card} .privacy`), /^Local ε = \d(\.\d+)? per report\.$/);
    }
    // The load time's distribution: a column per bin with its interval and
    // the simulated users' share; p50 and p95 with their intervals beside the truth.
    const load = '.card[data-metric="load_time"]';
    assert.equal(await page.locator(`${load} .hist .column`).count(), 32);
    assert.equal(await page.locator(`${load} .bin-truth`).count(), 32);
    assert.equal(await page.locator(`${load} .quantile .dot`).count(), 2);
    assert.equal(await page.locator(`${load} .quantile .truth`).count(), 2);
    assert.match(await page.textContent(`${load} .quantile .figure`), /^p50 [\d,]+ ms \(95%: [\d,]+ to [\d,]+ ms\) · truth [\d,]+ ms$/);
    // The key-value question: a bar, an interval and a truth marker per key,
    // and the mean minutes of the keys clear of noise (Search, held by 90%, always).
    const features = '.card[data-metric="features_used"]';
    for (const part of ['.bar', '.ci', '.truth']) assert.equal(await page.locator(`${features} ${part}`).count(), 6, part);
    assert.match(await page.textContent(`${features} .key-mean[data-key="Search"]`), /^Search: [\d.]+ min ± [\d.]+ min \(95%\) · truth [\d.]+ min$/);
    // The event of three fields: every pair's grid (4×5, 4×2, 5×2 cells),
    // each cell titled with its interval and the simulated truth.
    const device = '.card[data-metric="device"]';
    assert.equal(await page.locator(`${device} .marginal`).count(), 3);
    assert.equal(await page.locator(`${device} .cell`).count(), 20 + 8 + 10);
    assert.match(await page.getAttribute(`${device} .cell`, 'title'), /^Chrome · Windows: [\d.]+%, 95% interval -?[\d.]+% to [\d.]+%, truth [\d.]+%$/);
    // The open-text question: pages discovered with no list, the most common
    // first, each with an interval and the simulated truth.
    const discovered = '.card[data-metric="referrer"]';
    // The two most common pages (40% and 18% of the users) are listed in
    // every collection; the third (11%) in most but not all, since a found
    // value is estimated on the reports that did not select it.
    const found = await page.locator(`${discovered} .bar`).count();
    assert.ok(found >= 2, `${found} pages discovered`);
    assert.equal(await page.locator(`${discovered} .truth`).count(), found);
    assert.equal(await page.textContent(`${discovered} .bar-row .label`), '/');
    assert.match(await page.textContent(`${discovered} .note`), /Discovered with no list of pages/);

    // The estimate is near the truth of the simulated users: Chrome, the most
    // common, within 5 standard errors (fails with probability < 1e-6).
    const estimate = await (await fetch(`${server.url}/api/metrics/browser/estimate`)).json();
    const truth = await page.$eval('.card[data-metric="browser"] .truth', (t) => Number(t.title.match(/([\d.]+)%/)[1]) / 100);
    const chrome = estimate.estimates[0];
    assert.ok(Math.abs(chrome.unbiased_frequency - truth) < 5 * chrome.std_error + 1 / 5001, `${chrome.unbiased_frequency} vs ${truth}`);

    // The post-processing switch.
    await page.check('input[name="post"][value="project"]');
    await page.waitForFunction(() => document.querySelector('.card[data-metric="browser"] .note').textContent.includes('post-processed (project)'), null, { timeout: 10000 });

    await page.screenshot({ path: join(ARTIFACTS, 'demo-wide.png'), fullPage: true });
    await page.locator('#dashboard').screenshot({ path: join(ARTIFACTS, 'demo-dashboard.png') });

    // Only reports left the page: every POST body is a report or an array of
    // reports, and no answer's label appears in any of them.
    assert.ok(seen.posted.length >= 6 + 6 * 5);
    const labels = [...metrics.flatMap((m) => (Array.isArray(m.config.domain) ? m.config.domain : m.config.keys ?? [])), 'Safari', 'iOS', '/pricing', '/blog/ldp'];
    for (const { body } of seen.posted) {
      const reports = [JSON.parse(body)].flat();
      for (const report of reports) {
        assert.deepEqual(Object.keys(report).filter((k) => !REPORT_KEYS.has(k)), []);
      }
      for (const label of labels) assert.ok(!body.includes(label), `a body mentions ${label}`);
    }
    // Nothing fetched from anywhere else (no CDN), and no errors.
    assert.deepEqual(seen.requests.filter((u) => !u.startsWith(`${server.url}/`) && !u.startsWith('data:')), []);
    assert.deepEqual(seen.errors, []);
  } finally {
    await context.close();
  }
  // The collector logged counts only (its commits summed up, a line per
  // metric per 10 s at most: the simulator's 1,000 and the survey's answer).
  const log = await until(() => {
    const text = server.log.join('\n');
    const logged = [...text.matchAll(/ browser: (\d+) accepted/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    return logged >= 1000 && text;
  }, 'the commits of browser in the log', 15000);
  assert.ok(!/"(bits|value|seed)"|Firefox/.test(log), log);
});

test('the planner card: ε and users move the error bars, auto\'s choice marked', async () => {
  const { context, page, seen } = await open({ viewport: { width: 1280, height: 900 } });
  /** Moves a slider to `value` (log10 of ε or of the users), as a drag would. */
  const slide = (selector, value) => page.$eval(selector, (input, v) => {
    input.value = v;
    input.dispatchEvent(new Event('input'));
  }, String(value));
  const width = () => page.$eval('#plan-rows .bar-row.auto .ci', (ci) => ci.getBoundingClientRect().width);
  try {
    await page.selectOption('#plan-metric', 'feature');
    await page.waitForFunction(() => document.body.dataset.planned === 'feature:2:10000');
    // Every frequency protocol, auto's choice marked (GRR over 8 values at ε = 2).
    assert.equal(await page.locator('#plan-rows .bar-row[data-protocol]').count(), 9);
    assert.equal(await page.textContent('#plan-rows .bar-row.auto .label'), 'grr · auto');
    assert.match(await page.textContent('#plan-note'), /^auto's choice: grr\. .* means little below 685 users/);
    const at10000 = await width();
    // Four times the users: half the error.
    await slide('#plan-users', Math.log10(40000));
    await page.waitForFunction(() => document.body.dataset.planned === 'feature:2:40000');
    assert.equal(await page.textContent('#plan-users-value'), '40,000');
    const at40000 = await width();
    assert.ok(Math.abs(at40000 / at10000 - 0.5) < 0.05, `${at10000}px, then ${at40000}px`);
    // A smaller ε: wider bars, and auto may change its mind.
    await slide('#plan-epsilon', Math.log10(0.5));
    await page.waitForFunction(() => document.body.dataset.planned === 'feature:0.5:40000');
    assert.ok(await width() > at40000);
    assert.match(await page.textContent('#plan-rows .bar-row.auto .figure'), /^±\d/);
    // A distribution: Square Wave (auto's) has no closed form; the tree has.
    await page.selectOption('#plan-metric', 'load_time');
    await page.waitForFunction(() => document.body.dataset.planned?.startsWith('load_time:1:'));
    assert.equal(await page.textContent('#plan-rows .bar-row.auto .figure'), 'no closed form');
    assert.match(await page.textContent('#plan-rows .bar-row[data-protocol="hierarchical"] .figure'), /^±\d/);
    await page.selectOption('#plan-metric', 'feature');
    await page.locator('#planner').screenshot({ path: join(ARTIFACTS, 'demo-planner.png') });
    assert.deepEqual(seen.errors, []);
  } finally {
    await context.close();
  }
});

test('the demo draws no randomness from Math.random', () => {
  const www = process.env.LOCALDP_WWW;
  for (const file of readdirSync(www).filter((f) => f.endsWith('.js'))) {
    assert.doesNotMatch(readFileSync(join(www, file), 'utf8'), /Math\.random/, file);
  }
});

test('the demo reads well on a phone', async () => {
  const { context, page, seen } = await open({
    viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
  });
  try {
    await page.waitForSelector('.card[data-metric="browser"] .bar');
    // Nothing wider than the screen.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone`);
    await page.screenshot({ path: join(ARTIFACTS, 'demo-phone.png'), fullPage: true });
    assert.deepEqual(seen.errors, []);
  } finally {
    await context.close();
  }
});
