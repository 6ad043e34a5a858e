// Load check of the collector (not a timed test): concurrent local clients
// POST batches of reports to `localdp serve` for a few seconds each; prints
// accepted reports/s, requests/s and the request latency (p50, p99).
// Needs the release CLI and dist/ (npm start builds both).
//   node bench/load.mjs [--seconds 5] [--url http://127.0.0.1:8080]
//       [--runs 16x1,16x100,4x1000]   (clients x reports per batch)
// Without --url it starts its own server on a free port with a scratch
// database (WAL, synchronous=FULL: every accepted batch is on disk before
// the answer), and stops it afterwards.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);
const { Client } = require('../dist/node/localdp.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const seconds = Number(arg('seconds', 5));
const runs = arg('runs', '16x1,16x100,4x1000').split(',').map((r) => r.split('x').map(Number));

async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'localdp-load-'));
  const root = new URL('..', import.meta.url).pathname;
  const child = spawn(join(root, 'target/release/localdp'),
    ['serve', '--port', '0', '--db', join(dir, 'load.sqlite'), '--www', join(root, 'www'), '--pkg', join(root, 'dist/web')],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`localdp serve exited with ${code}`)));
  });
  return { url: url.replace(/\/$/, ''), stop: () => { child.kill('SIGTERM'); rmSync(dir, { recursive: true, force: true }); } };
}

const server = arg('url') ? { url: arg('url').replace(/\/$/, ''), stop: () => {} } : await startServer();
const { metrics } = await (await fetch(`${server.url}/api/metrics`)).json();
const metric = metrics.find((m) => m.kind === 'frequency');
const client = new Client(metric.config);
const labels = metric.config.domain;
// A pool of real reports, serialized once so the clients spend their time on HTTP.
const pool = Array.from({ length: 20000 }, (_, i) => JSON.stringify(client.randomize(labels[i % labels.length])));

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
console.log(`collector ${server.url}, metric "${metric.name}" (${metric.protocol}, d=${labels.length}); ${cpus().length} cores shared by server and clients; ${seconds} s per run`);
console.log(`${'clients'.padStart(7)}${'batch'.padStart(7)}${'requests'.padStart(10)}${'reports/s'.padStart(11)}${'requests/s'.padStart(12)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`);

for (const [clients, batch] of runs) {
  const bodies = Array.from({ length: 64 }, (_, b) => {
    const start = (b * batch) % (pool.length - batch);
    return batch === 1 ? pool[start] : `[${pool.slice(start, start + batch).join(',')}]`;
  });
  const latencies = [];
  let accepted = 0;
  let failed = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = c; performance.now() < deadline; i += clients) {
      const sent = performance.now();
      const response = await fetch(`${server.url}/api/metrics/${metric.name}/reports`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[i % bodies.length],
      });
      const answer = await response.json();
      latencies.push(performance.now() - sent);
      if (response.ok) accepted += answer.accepted;
      else failed++;
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const row = [
    String(clients).padStart(7), String(batch).padStart(7), String(latencies.length).padStart(10),
    Math.round(accepted / elapsed).toLocaleString('en-US').padStart(11),
    Math.round(latencies.length / elapsed).toLocaleString('en-US').padStart(12),
    quantile(latencies, 0.5).toFixed(1).padStart(9), quantile(latencies, 0.99).toFixed(1).padStart(9),
  ];
  console.log(row.join('') + (failed ? `  (${failed} requests failed)` : ''));
}
server.stop();
