// Load check of the collector (not a timed test): concurrent local clients
// POST batches of reports to `localdp serve` for a few seconds each; prints
// accepted reports/s, requests/s and the request latency (p50, p99).
// Needs the release CLI and dist/ (npm start builds both).
//   node bench/load.mjs [--seconds 5] [--url http://127.0.0.1:8080 [--token T]]
//       [--runs 1x1,16x1,64x1,16x100,4x1000]   (clients x reports per request)
//       [--bin target/release/localdp] [--postgres postgres://USER:PW@HOST:PORT/DB]
//       [--collector URL]   (with --url a shuffler's: the collector behind it)
// Without --url it starts its own server (--bin) on a free port with a
// scratch database (WAL, synchronous=FULL: every accepted batch is on disk
// before the answer) and no limits, and stops it afterwards. With
// --postgres it then does the same runs against one collector on that
// database, and against two on it with the clients dealt round-robin
// between them (the database keeps what they store: give it a scratch one).
//
// Each client is one keep-alive HTTP/1.1 connection with one request in
// flight, spoken over a plain socket: Node's fetch costs more CPU per
// request than the collector does (it tops out near 4,600 requests/s on
// two cores shared with the server), so with fetch this would measure fetch.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
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
const runs = arg('runs', '1x1,16x1,64x1,16x100,4x1000').split(',').map((r) => r.split('x').map(Number));
const root = new URL('..', import.meta.url).pathname;

async function startServer(db) {
  const dir = mkdtempSync(join(tmpdir(), 'localdp-load-'));
  const child = spawn(arg('bin', join(root, 'target/release/localdp')),
    ['serve', '--port', '0', '--db', db ?? join(dir, 'load.sqlite'), '--www', join(root, 'www'), '--pkg', join(root, 'dist/web')],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`localdp serve exited with ${code}`)));
  });
  // The scratch database goes once the server has exited (it stores what
  // is queued on SIGTERM).
  const stop = async () => {
    const exited = new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: url.replace(/\/$/, ''), stop };
}

/** One keep-alive connection; `send(head, body)` resolves to { status, body }. */
function connection(url) {
  const socket = connect(Number(url.port), url.hostname);
  socket.setNoDelay(true);
  let buffer = Buffer.alloc(0);
  let waiting = null;
  socket.on('data', (data) => {
    buffer = buffer.length ? Buffer.concat([buffer, data]) : data;
    const end = buffer.indexOf('\r\n\r\n');
    if (end < 0 || !waiting) return;
    const head = buffer.toString('latin1', 0, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!length) return waiting.reject(new Error(`no Content-Length in ${JSON.stringify(head)}`));
    const size = end + 4 + Number(length[1]);
    if (buffer.length < size) return;
    const answer = { status: Number(head.slice(9, 12)), body: buffer.toString('utf8', end + 4, size) };
    buffer = buffer.subarray(size);
    const { resolve } = waiting;
    waiting = null;
    resolve(answer);
  });
  const fail = (e) => { if (waiting) waiting.reject(e ?? new Error('connection closed')); waiting = null; };
  socket.on('error', fail);
  socket.on('close', () => fail());
  return {
    send: (request) => new Promise((resolve, reject) => { waiting = { resolve, reject }; socket.write(request); }),
    close: () => socket.destroy(),
  };
}

const postgres = arg('postgres');
const setups = arg('url')
  ? [{ name: arg('url'), servers: async () => [{ url: arg('url').replace(/\/$/, ''), stop: async () => {} }] }]
  : [
    { name: 'one collector, SQLite', servers: async () => [await startServer()] },
    ...(postgres ? [
      { name: 'one collector, PostgreSQL', servers: async () => [await startServer(postgres)] },
      { name: 'two collectors, PostgreSQL, clients round-robin', servers: async () => [await startServer(postgres), await startServer(postgres)] },
    ] : []),
  ];
const auth = arg('token') ? { authorization: `Bearer ${arg('token')}` } : {};
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

for (const setup of setups) {
  const servers = await setup.servers();
  // A shuffler (--url) serves no metric list: --collector names the collector behind it.
  const { metrics } = await (await fetch(`${arg('collector', servers[0].url)}/api/metrics`, { headers: auth })).json();
  const metric = metrics.find((m) => m.kind === 'frequency');
  const client = new Client(metric.config);
  const labels = metric.config.domain;
  // A pool of real reports, serialized once so the clients spend their time on HTTP.
  const pool = Array.from({ length: 20000 }, (_, i) => JSON.stringify(client.randomize(labels[i % labels.length])));
  const targets = servers.map((server) => new URL(`${server.url}/api/metrics/${metric.name}/reports`));

  console.log(`${setup.name}: ${servers.map((s) => s.url).join(', ')}, metric "${metric.name}" (${metric.protocol}, d=${labels.length}); ${cpus().length} cores shared by servers and clients; ${seconds} s per run`);
  console.log(`${'clients'.padStart(7)}${'batch'.padStart(7)}${'requests'.padStart(10)}${'reports/s'.padStart(11)}${'requests/s'.padStart(12)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}`);

  for (const [clients, batch] of runs) {
    // Per collector: the request heads name its host.
    const requests = targets.map((target) => Array.from({ length: 64 }, (_, b) => {
      const start = (b * batch) % (pool.length - batch);
      const body = Buffer.from(batch === 1 ? pool[start] : `[${pool.slice(start, start + batch).join(',')}]`);
      const head = `POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      return Buffer.concat([Buffer.from(head, 'latin1'), body]);
    }));
    const latencies = [];
    const failures = new Map();
    let accepted = 0;
    const started = performance.now();
    const deadline = started + seconds * 1000;
    await Promise.all(Array.from({ length: clients }, async (_, c) => {
      // Client c talks to collector c mod N (round-robin).
      const link = connection(targets[c % targets.length]);
      const mine = requests[c % targets.length];
      try {
        for (let i = c; performance.now() < deadline; i += clients) {
          const sent = performance.now();
          const response = await link.send(mine[i % mine.length]);
          latencies.push(performance.now() - sent);
          if (response.status === 200) accepted += JSON.parse(response.body).accepted;
          else failures.set(response.status, (failures.get(response.status) ?? 0) + 1);
        }
      } finally {
        link.close();
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
    const failed = [...failures].map(([status, n]) => `${n} × ${status}`).join(', ');
    console.log(row.join('') + (failed ? `  (failed: ${failed})` : ''));
  }
  for (const server of servers) await server.stop();
}
