// Cross-origin collection in headless Chromium: a page on a second local
// origin (another port) randomizes with the package's web build and posts
// to `localdp serve --allow-origin <that origin> --token-file …`:
// `navigator.sendBeacon` with a text/plain body (no preflight), a JSON
// `fetch` (preflighted) whose answer the page can read, and a dashboard-style
// read of the estimate with a bearer token. A page on a third origin, not
// allowed, gets its preflights refused and its beacon counts nothing; its
// `client.send` rejects with the collector's reason, as it does from any
// page posting to a collector started without --allow-origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve, startCollector, stopCollector, until, CHROMIUM } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));
const TOKEN = 'js-test-token-5b0c8e1d7a2f4c6e9d3b';
const CONFIG = { protocol: 'grr', epsilon: 1.0, domain: ['red', 'green', 'blue'] };

// The page: it reports what each way of sending did.
const PAGE = `<!doctype html><meta charset="utf-8"><title>another origin</title>
<script type="module" src="/page.js"></script>`;
const SCRIPT = `import init, { Client } from '/localdp/web/localdp.js';
const params = new URLSearchParams(location.search);
const collector = params.get('collector');
const config = JSON.parse(params.get('config'));
const reportsUrl = collector + '/api/metrics/colors/reports';
const attempt = async (request) => {
  try {
    const response = await request();
    return { status: response.status, body: await response.json() };
  } catch (e) {
    return { error: String(e) };
  }
};
async function run() {
  await init();
  const report = (value) => report.client.randomize(value);
  report.client = new Client(config);
  const result = {};
  // A beacon: a text/plain Blob is a simple request, sent without a preflight.
  result.beacon = navigator.sendBeacon(reportsUrl, new Blob([JSON.stringify(report('red'))], { type: 'text/plain' }));
  // A JSON post: preflighted, and its answer readable only with CORS headers.
  result.post = await attempt(() => fetch(reportsUrl, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify([report('green'), report('blue')]),
  }));
  // A dashboard on this origin reads the estimate with a token.
  result.estimate = await attempt(() => fetch(collector + '/api/metrics/colors/estimate', {
    headers: { authorization: 'Bearer ' + params.get('token') },
  }));
  // client.send: fetch with keepalive, its answer (or its refusal's reason) readable.
  result.send = await report.client.send(reportsUrl, 'red')
    .then((answer) => ({ answer }), (e) => ({ name: e.name, status: e.status, message: e.message }));
  window.result = result;
}
run().catch((e) => { window.result = { failure: String(e) }; });
`;

let scratch;
let collector;
let closed;
let allowed;
let other;
let browser;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'localdp-cors-'));
  const pageDir = join(scratch, 'page');
  mkdirSync(pageDir);
  writeFileSync(join(pageDir, 'index.html'), PAGE);
  writeFileSync(join(pageDir, 'page.js'), SCRIPT);
  writeFileSync(join(scratch, 'metrics.json'), JSON.stringify([{ name: 'colors', config: CONFIG }]));
  writeFileSync(join(scratch, 'tokens.txt'), `${TOKEN}\n`);
  const mounts = { '/': pageDir, '/localdp/': join(packageDir, 'dist') };
  // Two more origins: same host, other ports.
  allowed = await serve(mounts);
  other = await serve(mounts);
  collector = await startCollector([
    '--db', join(scratch, 'cors.sqlite'), '--metrics', join(scratch, 'metrics.json'),
    '--www', join(scratch, 'no-www'), '--pkg', join(scratch, 'no-pkg'),
    '--allow-origin', allowed.url, '--token-file', join(scratch, 'tokens.txt'),
  ]);
  // A collector for its own pages only (no --allow-origin).
  closed = await startCollector([
    '--db', join(scratch, 'closed.sqlite'), '--metrics', join(scratch, 'metrics.json'),
    '--www', join(scratch, 'no-www'), '--pkg', join(scratch, 'no-pkg'),
  ]);
  browser = await chromium.launch(CHROMIUM);
});

after(async () => {
  await browser?.close();
  await allowed?.close();
  await other?.close();
  for (const server of [collector, closed]) {
    if (server) await stopCollector(server);
  }
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** GET with the token, from Node (no Origin). */
const read = (path, server = collector) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
const count = async (server = collector) => (await (await read('/api/metrics/colors', server)).json()).n;
/** One series of /metrics, 0 if absent. */
async function series(name, server = collector) {
  const text = await (await read('/metrics', server)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

/** Opens the page on `origin`, posting to `server`, and returns what it did. */
async function visit(origin, server = collector) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    const query = new URLSearchParams({ collector: server.url, config: JSON.stringify(CONFIG), token: TOKEN });
    await page.goto(`${origin}/?${query}`);
    await page.waitForFunction(() => window.result, null, { timeout: 30000 });
    const result = await page.evaluate(() => window.result);
    assert.equal(result.failure, undefined, result.failure);
    assert.deepEqual(errors, []);
    return result;
  } finally {
    await page.close();
  }
}

test('a page on an allowed origin posts by beacon and by preflighted fetch, and reads with a token', async () => {
  assert.notEqual(new URL(allowed.url).origin, new URL(collector.url).origin);
  const result = await visit(allowed.url);
  assert.equal(result.beacon, true, 'the beacon was queued');
  assert.equal(result.post.status, 200, JSON.stringify(result.post));
  assert.equal(result.post.body.accepted, 2);
  assert.equal(result.estimate.status, 200, JSON.stringify(result.estimate));
  assert.ok(result.estimate.body.n >= 2);
  assert.equal(result.send.answer?.accepted, 1, JSON.stringify(result.send));
  // The beacon arrives on its own time: then all four are counted.
  await until(async () => (await count()) === 4, 'the beacon to be counted');
  const estimate = await (await read('/api/metrics/colors/estimate')).json();
  assert.equal(estimate.n, 4);
  // Two preflights (the JSON post, the read with a token): the beacon needed none.
  assert.equal(await series('localdp_http_requests_total{route="preflight",status="204"}'), 2);
  // A request is counted once its handler has returned: the beacon's 200
  // may follow its report's count by a moment.
  await until(async () => (await series('localdp_http_requests_total{route="reports",status="200"}')) === 3, 'the beacon\'s 200 to be counted');
});

test('a page on another origin is refused and counts nothing', async () => {
  const before = await count();
  const refusedBefore = await series('localdp_http_requests_total{route="reports",status="403"}');
  const result = await visit(other.url);
  // The browser sends the beacon (it cannot know); the collector refuses it.
  assert.equal(result.beacon, true);
  // The preflights fail, so fetch throws before anything is posted or read.
  assert.match(result.post.error ?? '', /TypeError|Failed to fetch/, JSON.stringify(result.post));
  assert.match(result.estimate.error ?? '', /TypeError|Failed to fetch/, JSON.stringify(result.estimate));
  // send reads the refusal: the collector's reason, not "Failed to fetch".
  assert.equal(result.send.name, 'CollectorError', JSON.stringify(result.send));
  assert.equal(result.send.status, 403);
  assert.match(result.send.message, /may not post reports here.*--allow-origin ORIGIN; nothing was counted/);
  await until(async () =>
    (await series('localdp_http_requests_total{route="reports",status="403"}')) === refusedBefore + 2, 'the beacon to be refused');
  assert.ok((await series('localdp_http_requests_total{route="preflight",status="403"}')) >= 2);
  assert.equal(await count(), before);
});

test('without --allow-origin, a page on another origin is refused, readably, and counts nothing', async () => {
  const result = await visit(allowed.url, closed);
  assert.equal(result.send.name, 'CollectorError', JSON.stringify(result.send));
  assert.equal(result.send.status, 403);
  assert.match(result.send.message, /nothing was counted/);
  // The beacon is refused too (its answer unreadable, it must not count).
  await until(async () =>
    (await series('localdp_http_requests_total{route="reports",status="403"}', closed)) === 2, 'the beacon to be refused');
  assert.equal(await count(closed), 0);
});
