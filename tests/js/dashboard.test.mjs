// The operator's dashboard (`localdp serve` at /dashboard), driven in
// headless Chromium against the real collector with a metrics file of every
// family, a token and a tight request limit, and no demo (no --www): refused
// with a wrong token, opened with the right one (kept in sessionStorage
// only), then n, the estimates with their intervals, the rejections by
// reason, the 429s and the planner's too-small note, which goes once n is
// large. Its screenshot goes to ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startCollector, stopCollector, cli, CHROMIUM, ARTIFACTS } from './helpers.mjs';

const TOKEN = 'dashboard-test-token-0123456789abcdef';
const METRICS = [
  { name: 'browser', title: 'Browser', config: { protocol: 'grr', epsilon: 4, domain: ['Chrome', 'Safari', 'Firefox'] } },
  { name: 'latency', title: 'Request latency', unit: 'ms', config: { protocol: 'piecewise', epsilon: 2, range: [0, 1000] } },
  { name: 'load_time', title: 'Page load time', unit: 'ms', config: { protocol: 'distribution', epsilon: 2, range: [0, 5000], bins: 8 } },
  { name: 'pages', title: 'Pages', config: { protocol: 'pem', epsilon: 4, max_length: 8, top: 3 } },
  { name: 'sections', title: 'Sections', config: { protocol: 'cms', epsilon: 4, sketch: { hashes: 16, width: 64 }, candidates: ['/', '/blog', '/nowhere'] } },
  { name: 'apps', title: 'Installed apps', config: { protocol: 'rappor', bits: 16, hashes: 2, cohorts: 4, candidates: ['mail', 'maps', 'chat'] } },
  { name: 'events', title: 'Browser × OS', config: { protocol: 'marginals', epsilon: 4, attributes: [{ name: 'browser', domain: ['Chrome', 'Safari'] }, { name: 'os', domain: 3 }] } },
  { name: 'minutes', title: 'Minutes per feature', unit: 'min', config: { protocol: 'key_value', epsilon: 4, keys: ['Search', 'Reports'], range: [0, 120], pad: 2 } },
];
/** Report posts, and reports, per minute from one address: the test's own posts fit in both. */
const REQUESTS_PER_MINUTE = 12;
const REPORTS_PER_MINUTE = 20000;

let browser;
let collector;
let scratch;

/** `count` values drawn in a fixed cycle from `values`. */
const cycle = (values, count) => Array.from({ length: count }, (_, i) => values[i % values.length]);

/** Seeded reports of `values` for metric `name` of `metrics` (the CLI's randomizer). */
function randomized(name, values, seed, metrics = METRICS) {
  const config = join(scratch, `${name}.json`);
  writeFileSync(config, JSON.stringify(metrics.find((m) => m.name === name).config));
  return cli(['randomize', '--config', config, '--seed', String(seed)], values.map((v) => `${v}\n`).join(''))
    .trim().split('\n');
}

async function post(name, body, headers = {}) {
  return fetch(`${collector.url}/api/metrics/${name}/reports`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body,
  });
}

async function postReports(name, reports) {
  const response = await post(name, `[${reports.join(',')}]`);
  assert.equal(response.status, 200, await response.text());
}

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  scratch = mkdtempSync(join(tmpdir(), 'localdp-dashboard-'));
  writeFileSync(join(scratch, 'metrics.json'), JSON.stringify(METRICS));
  writeFileSync(join(scratch, 'tokens'), `${TOKEN}\n`);
  collector = await startCollector([
    '--db', join(scratch, 'reports.sqlite'), '--metrics', join(scratch, 'metrics.json'),
    '--www', join(scratch, 'no-demo'), '--pkg', join(scratch, 'no-pkg'),
    '--token-file', join(scratch, 'tokens'), '--requests-per-minute', String(REQUESTS_PER_MINUTE),
    '--reports-per-minute', String(REPORTS_PER_MINUTE), '--trust-proxy',
    '--max-body', String(8 << 20),
  ]);
  browser = await chromium.launch(CHROMIUM);
});

after(async () => {
  await browser?.close();
  await stopCollector(collector);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Every metric's description with counts, by name (with the token). */
async function described() {
  const response = await fetch(`${collector.url}/api/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.status, 200);
  return Object.fromEntries((await response.json()).metrics.map((m) => [m.name, m]));
}

/** The text of a metric card's fact (`n`, `epsilon`, `central`, `rejected`, `limited`). */
const fact = (page, metric, key) => page.locator(`article[data-metric="${metric}"] dd.${key}`);
const card = (page, metric) => page.locator(`article[data-metric="${metric}"]`);

/** Clicks Refresh and waits until the card of `metric` shows `n`. */
async function refreshedTo(page, metric, n) {
  await page.click('#refresh');
  await page.waitForSelector(`article[data-metric="${metric}"][data-n="${n}"]`, { timeout: 15000 });
}

test('the dashboard is built in, under a policy without inline script', async () => {
  const response = await fetch(`${collector.url}/dashboard`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/html/);
  const policy = response.headers.get('content-security-policy');
  assert.match(policy, /script-src 'self'(;|$)/);
  assert.match(policy, /default-src 'none'/);
  assert.doesNotMatch(policy, /unsafe/);
  const html = await response.text();
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, 'no inline script');
  assert.doesNotMatch(html, /\bstyle=/, 'no inline style');
  for (const file of ['dashboard.js', 'dashboard.css', 'base.css']) {
    const asset = await fetch(`${collector.url}/dashboard/${file}`);
    assert.equal(asset.status, 200, file);
    assert.equal(asset.headers.get('x-content-type-options'), 'nosniff');
  }
  assert.equal((await fetch(`${collector.url}/dashboard/other.js`)).status, 404);
  // No demo was given: the dashboard does not need it.
  assert.equal((await fetch(`${collector.url}/`)).status, 404);
});

test('without tokens, the dashboard says so and shows everything', async () => {
  const open = await startCollector([
    '--db', join(scratch, 'open.sqlite'), '--metrics', join(scratch, 'metrics.json'), '--www', join(scratch, 'no-demo'),
  ]);
  const page = await browser.newPage();
  try {
    await page.goto(`${open.url}/dashboard`);
    await page.waitForSelector('body[data-state="ready"]');
    assert.equal(await page.locator('body').getAttribute('data-access'), 'open');
    assert.match(await page.locator('#access').textContent(), /^This collector has no tokens \(--token-file\): anyone who reaches it reads/);
    assert.equal(await page.locator('#login').isVisible(), false);
    assert.equal(await page.locator('#sign-out').isVisible(), false);
    assert.equal(await page.locator('article.metric').count(), METRICS.length);
    assert.equal(await page.evaluate(() => sessionStorage.length + localStorage.length), 0);
  } finally {
    await page.close();
    await stopCollector(open);
  }
});

test('the demo\'s metrics: every card draws its estimate', async () => {
  const www = process.env.LOCALDP_WWW ?? new URL('../../www', import.meta.url).pathname;
  const demo = JSON.parse(readFileSync(join(www, 'metrics.json'), 'utf8'));
  const values = {
    browser: cycle(['Chrome', 'Chrome', 'Safari', 'Firefox'], 600),
    feature: cycle(['Search', 'Reports', 'API'], 600),
    load_time: cycle([300, 800, 1200, 2500], 2000),
    device: cycle(['{"browser":"Chrome","os":"Windows","device":"desktop"}', '{"browser":"Safari","os":"iOS","device":"mobile"}'], 600),
    referrer: cycle(['/', '/', '/', '/blog', '/blog', '/docs'], 6000),
    features_used: cycle(['{"Search":20}', '{"Search":40,"Reports":90}', '{"Alerts":5}'], 600),
  };
  assert.deepEqual(demo.map((m) => m.name).sort(), Object.keys(values).sort(), 'a value list for each of the demo\'s metrics');
  const open = await startCollector([
    '--db', join(scratch, 'demo.sqlite'), '--metrics', join(www, 'metrics.json'), '--www', join(scratch, 'no-demo'),
    '--max-body', String(8 << 20),
  ]);
  const page = await browser.newPage();
  try {
    for (const [i, m] of demo.entries()) {
      const reports = randomized(m.name, values[m.name], 20 + i, demo);
      const response = await fetch(`${open.url}/api/metrics/${m.name}/reports`, { method: 'POST', body: `[${reports.join(',')}]` });
      assert.equal(response.status, 200, await response.text());
    }
    await page.goto(`${open.url}/dashboard`);
    await page.waitForSelector('body[data-state="ready"]');
    for (const m of demo) {
      await page.waitForSelector(`article[data-metric="${m.name}"][data-n="${values[m.name].length}"]`, { timeout: 15000 });
    }
    // Every estimate drawn (a card's n and plot are set together): a card
    // that cannot draw says "Cannot draw this estimate: …", a failed
    // estimate "Estimate: STATUS, …", both as .error.
    assert.deepEqual(await page.locator('article.metric .plot .error').allTextContents(), []);
    assert.equal(await page.getByText('Cannot draw').count(), 0, await page.locator('main').textContent());
    assert.equal(await page.getByText('No reports yet.').count(), 0);
    await page.screenshot({ path: join(ARTIFACTS, 'operator-dashboard-demo.png'), fullPage: true });
  } finally {
    await page.close();
    await stopCollector(open);
  }
});

test('the central ε of a shuffled metric, as its description\'s "shuffled" gives it', async () => {
  const page = await browser.newPage();
  // The description as a collector with a shuffler answers it: one metric with
  // a central ε, one whose batches are too small for one, one with "shuffled": null.
  const shuffled = {
    browser: { batches: 3, reports: 3000, smallest_batch: 900, central: { epsilon: 0.4132, delta: 1e-6 },
      shufflers: [{ fingerprint: 'af476939', batches: 3 }], note: 'Each batch was shuffled before the collector saw it.' },
    latency: { batches: 2, reports: 40, smallest_batch: 15, central: null,
      shufflers: [{ fingerprint: 'af476939', batches: 1 }, { fingerprint: '27f11cd7', batches: 1 }], note: 'The smallest batch is too small for amplification.' },
    load_time: null,
  };
  await page.route('**/api/metrics', async (route) => {
    const response = await route.fetch();
    const body = await response.json();
    if (response.ok()) body.metrics = body.metrics.map((m) => (m.name in shuffled ? { ...m, shuffled: shuffled[m.name] } : m));
    await route.fulfill({ response, json: body });
  });
  try {
    await page.goto(`${collector.url}/dashboard`);
    await page.waitForSelector('body[data-state="login"]');
    await page.fill('#token', TOKEN);
    await page.click('#login button[type="submit"]');
    await page.waitForSelector('body[data-state="ready"]');
    const caveat = ' Only if the shuffler is run by someone other than the collector.';
    assert.equal(await fact(page, 'browser', 'central').textContent(),
      `ε = 0.413, δ = 1e-6 (3,000 reports in 3 batches, the smallest 900, from shuffler token af476939)${caveat}`);
    assert.equal(await fact(page, 'browser', 'central').locator('.caveat').getAttribute('title'), shuffled.browser.note);
    assert.equal(await fact(page, 'latency', 'central').textContent(),
      `none yet (40 reports in 2 batches, the smallest 15, from shuffler tokens af476939 (1), 27f11cd7 (1))${caveat}`);
    assert.equal(await fact(page, 'latency', 'central').locator('.caveat').getAttribute('title'), shuffled.latency.note);
    assert.equal(await fact(page, 'load_time', 'central').textContent(), 'no shuffler');
    assert.equal(await fact(page, 'pages', 'central').textContent(), 'no shuffler');
  } finally {
    await page.close();
  }
});

test('the dashboard: token login, n, estimates with intervals, rejections, 429s, the too-small note', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  const elsewhere = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith(collector.url) && !r.url().startsWith('data:')) elsewhere.push(r.url()); });
  try {
    // 1. The collector has tokens: the page asks for one, and refuses a wrong one.
    await page.goto(`${collector.url}/dashboard`);
    await page.waitForSelector('body[data-state="login"]');
    assert.equal(await page.locator('article.metric').count(), 0, 'nothing shown before the login');
    await page.fill('#token', 'not-the-token-0123456789');
    await page.click('#login button[type="submit"]');
    await page.waitForFunction(() => document.querySelector('#login-error').textContent.includes('refused'));
    assert.equal(await page.locator('body').getAttribute('data-state'), 'login');
    assert.equal(await page.locator('article.metric').count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.length + localStorage.length), 0, 'a refused token is not kept');

    // 2. The right token opens it; it is kept in this tab only.
    await page.fill('#token', TOKEN);
    await page.click('#login button[type="submit"]');
    await page.waitForSelector('body[data-state="ready"]');
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'never in localStorage');
    assert.deepEqual(await page.evaluate(() => Object.values(sessionStorage)), [TOKEN]);
    assert.deepEqual(await page.locator('article.metric').evaluateAll((cards) => cards.map((c) => c.dataset.metric)), METRICS.map((m) => m.name));
    for (const m of METRICS) {
      assert.equal(await fact(page, m.name, 'n').textContent(), '0');
      assert.equal(await fact(page, m.name, 'central').textContent(), 'no shuffler');
      assert.equal(await card(page, m.name).locator('.plot').textContent(), 'No reports yet.');
    }
    assert.equal(await fact(page, 'browser', 'epsilon').textContent(), 'ε = 4');

    // 3. A few reports: n, the estimate with its intervals, and the too-small note.
    await postReports('browser', randomized('browser', cycle(['Chrome', 'Chrome', 'Safari', 'Firefox'], 20), 1));
    await page.reload();
    await page.waitForSelector('body[data-state="ready"]'); // the token survived the reload (same tab)
    await refreshedTo(page, 'browser', 20);
    assert.equal(await fact(page, 'browser', 'n').textContent(), '20');
    const small = card(page, 'browser').locator('.too-small');
    assert.ok(await small.isVisible());
    const planned = await described();
    assert.ok(planned.browser.min_users > 21 && planned.browser.min_users < 5021, `${planned.browser.min_users}`);
    assert.equal(await small.textContent(),
      `n = 20: below the ~${planned.browser.min_users} users this metric needs before its estimate means anything (see localdp plan).`);
    assert.equal(await small.locator('code').textContent(), 'localdp plan');
    const rows = card(page, 'browser').locator('.bar-row[data-value]');
    assert.deepEqual(await rows.evaluateAll((r) => r.map((x) => x.dataset.value)), ['Chrome', 'Safari', 'Firefox']);
    for (const row of await rows.all()) {
      assert.match(await row.locator('.figure').textContent(), /^-?\d+\.\d% ± \d+\.\d%$/);
      const whisker = await row.locator('.whisker').boundingBox();
      assert.ok(whisker.width > 10, `a 95% whisker at n = 20 is wide: ${whisker.width}px`);
    }

    // 4. A bad report of each of two kinds: rejections by reason.
    const good = randomized('browser', ['Chrome'], 2)[0];
    const outside = JSON.stringify({ ...JSON.parse(good), value: 9 });
    const mixed = await post('browser', `[{"hello":"world"},${outside},${good}]`);
    assert.equal(mixed.status, 200);
    await refreshedTo(page, 'browser', 21);
    const reasons = fact(page, 'browser', 'rejected').locator('.reason');
    assert.deepEqual(await reasons.evaluateAll((r) => r.map((x) => [x.dataset.reason, x.textContent])),
      [['malformed', 'malformed 1'], ['out_of_range', 'out of range 1']]);

    // 5. Every other family, with enough reports to estimate.
    await postReports('latency', randomized('latency', cycle([100, 200, 300, 400], 400), 3));
    await postReports('load_time', randomized('load_time', cycle([300, 800, 1200, 2500], 2000), 4));
    await postReports('pages', randomized('pages', cycle(['/', '/', '/', '/', '/blog', '/blog', '/shop', '/docs', '/a', '/b'], 8000), 5));
    await postReports('apps', randomized('apps', cycle(['mail', 'mail', 'maps'], 3000), 6));
    await postReports('sections', randomized('sections', cycle(['/', '/', '/blog'], 900), 8));
    await postReports('events', randomized('events', cycle(['{"browser":"Chrome","os":0}', '{"browser":"Safari","os":2}'], 300), 9));
    await refreshedTo(page, 'apps', 3000);
    await refreshedTo(page, 'sections', 900);
    await postReports('minutes', randomized('minutes', cycle(['{"Search":20}', '{"Search":40,"Reports":90}'], 200), 10));
    await refreshedTo(page, 'events', 300);
    await refreshedTo(page, 'minutes', 200);
    // A key-value metric: each key's share, then its mean among its holders.
    const held = await card(page, 'minutes').locator('.bars:not(.key-means) .bar-row[data-value]').evaluateAll((r) => r.map((x) => x.dataset.value));
    assert.deepEqual(held, ['Search', 'Reports']);
    const keyMeans = card(page, 'minutes').locator('.key-means .bar-row[data-key]');
    assert.deepEqual(await keyMeans.evaluateAll((r) => r.map((x) => x.dataset.key)), ['Search', 'Reports']);
    assert.match(await keyMeans.first().locator('.figure').textContent(), /^-?\d+(\.\d+)? ± \d+(\.\d+)? min$/);
    // An event metric: each field's histogram, under its name.
    assert.deepEqual(await card(page, 'events').locator('h4').allTextContents(), ['browser', 'os']);
    const fields = await card(page, 'events').locator('.bar-row[data-value]').evaluateAll((r) => r.map((x) => x.dataset.value));
    assert.deepEqual(fields, ['Chrome', 'Safari', '0', '1', '2']);
    assert.match(await card(page, 'latency').locator('.interval .figure').textContent(), /^mean \d+(\.\d+)? ms ± \d+(\.\d+)? ms \(95%\)$/);
    const quantiles = card(page, 'load_time').locator('.quantiles .bar-row[data-q]');
    assert.deepEqual(await quantiles.evaluateAll((q) => q.map((x) => x.dataset.q)), ['0.5', '0.9', '0.95', '0.99']);
    assert.equal(await quantiles.first().locator('.label').textContent(), 'p50');
    assert.match(await quantiles.first().locator('.figure').textContent(), /^[\d,]+ ms \(-?[\d,]+ to [\d,]+\)$/);
    assert.equal(await card(page, 'load_time').locator('.quantiles .whisker').count(), 5, 'four quantiles and the mean');
    assert.equal(await card(page, 'load_time').locator('.hist .column').count(), 8);
    assert.equal(await card(page, 'load_time').locator('.hist .column .whisker').count(), 8);
    const found = await card(page, 'pages').locator('.bar-row[data-value]').evaluateAll((r) => r.map((x) => x.dataset.value));
    assert.ok(found.includes('/'), `the most frequent page is found: ${found}`);
    const sketched = await card(page, 'sections').locator('.bar-row[data-value]').evaluateAll((r) => r.map((x) => x.dataset.value));
    assert.deepEqual(sketched, ['/', '/blog', '/nowhere'], 'a sketch draws every candidate');
    const detected = await card(page, 'apps').locator('.bar-row[data-value]').evaluateAll((r) => r.map((x) => x.dataset.value));
    assert.ok(detected.includes('mail'), `the most frequent app is detected: ${detected}`);
    assert.match(await fact(page, 'apps', 'epsilon').textContent(), /^ε₁ = \d/);
    assert.match(await card(page, 'apps').locator('.note').textContent(), /ε∞ = \d+\.\d\d/);

    // 6. Large n: the note goes.
    await postReports('browser', randomized('browser', cycle(['Chrome', 'Chrome', 'Safari', 'Firefox'], 5000), 7));
    await refreshedTo(page, 'browser', 5021);
    assert.equal(await small.isVisible(), false, `at n = 5,021: ${await small.textContent()}`);
    // RAPPOR's floor is higher than its 3,000 reports: its note stays.
    const apps = card(page, 'apps').locator('.too-small');
    assert.ok((await described()).apps.min_users > 3000);
    assert.match(await apps.textContent(), /^n = 3,000: below the ~[\d,]+ users/);
    assert.ok(await apps.isVisible());

    // 7. The limits, each run into from an address of its own (--trust-proxy):
    // empty posts until one is past the request limit, and the same batch twice,
    // the second past the report limit. Both 429s are counted.
    const from = (address) => ({ 'x-forwarded-for': address });
    let refused = 0;
    for (let i = 0; i < 3 * REQUESTS_PER_MINUTE && refused === 0; i++) {
      const response = await post('latency', '[]', from('10.0.0.2'));
      if (response.status === 429) refused++;
      else assert.equal(response.status, 400);
    }
    assert.equal(refused, 1, 'a post past the request limit is refused');
    const batch = `[${randomized('latency', cycle([150, 250], REPORTS_PER_MINUTE * 0.6), 8).join(',')}]`;
    assert.equal((await post('latency', batch, from('10.0.0.3'))).status, 200);
    const second = await post('latency', batch, from('10.0.0.3'));
    assert.equal(second.status, 429, 'the same batch again does not fit in what is left');
    assert.equal((await second.json()).limit, 'reports');
    await refreshedTo(page, 'latency', 400 + REPORTS_PER_MINUTE * 0.6);
    assert.equal(await fact(page, 'latency', 'limited').getAttribute('data-count'), '2');
    assert.equal(await fact(page, 'latency', 'limited').textContent(),
      '2 posts (request limit 1, report limit 1); the 12,000 reports in them not counted');
    assert.equal(await fact(page, 'browser', 'limited').textContent(), 'none');

    await page.screenshot({ path: join(ARTIFACTS, 'operator-dashboard.png'), fullPage: true });
    // One card of every family, each drawn.
    assert.equal(await page.getByText('Cannot draw').count(), 0, await page.locator('main').textContent());

    // 8. Signing out forgets the token.
    await page.click('#sign-out');
    await page.waitForSelector('body[data-state="login"]');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    // Chromium logs the 401s of the login (no token, then a wrong one) as failed loads: nothing else.
    assert.deepEqual(errors.filter((e) => !/status of 401 \(Unauthorized\)/.test(e)), [], 'no errors (a policy violation is one)');
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.deepEqual(elsewhere, [], 'nothing fetched from anywhere but the collector');
  } finally {
    await context.close();
  }
});
