// Shared by the JS tests: a static file server for the browser tests, the CLI
// runner for the interoperability tests, Chromium's launch options, and an
// in-memory store and lock manager for `Client.open` in Node.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { extname, join, normalize } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
};

/** Serves `mounts` ({ '/prefix': '/dir' }) on a free loopback port. */
export async function serve(mounts, headers = {}) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const prefix = Object.keys(mounts).filter((p) => path.startsWith(p)).sort((a, b) => b.length - a.length)[0];
    if (prefix === undefined) return res.writeHead(404).end();
    let file = normalize(join(mounts[prefix], path.slice(prefix.length)));
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', ...headers });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/**
 * Starts `localdp serve --port 0 ...args` ($LOCALDP_CLI, else the release
 * build); resolves to { url, child, log } once it prints its URL, rejects
 * with its stderr if it exits first.
 */
export async function startCollector(args) {
  const cli = process.env.LOCALDP_CLI ?? fileURLToPath(new URL('../../target/release/localdp', import.meta.url));
  if (!existsSync(cli)) throw new Error(`no localdp binary at ${cli}: set LOCALDP_CLI or build the release CLI`);
  const child = spawn(cli, ['serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = [];
  createInterface({ input: child.stderr }).on('line', (line) => log.push(line));
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`localdp serve exited (${code}): ${log.join('\n')}`)));
  });
  return { url: url.replace(/\/$/, ''), child, log };
}

/** Stops a collector from `startCollector` and waits for it to exit. */
export async function stopCollector(collector) {
  if (!collector || collector.child.exitCode !== null) return;
  const exited = new Promise((resolve) => collector.child.once('exit', resolve));
  collector.child.kill('SIGTERM');
  await exited;
}

/** Polls `probe` until it returns a truthy value or `ms` pass (then fails with `what`). */
export async function until(probe, what, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs the `localdp` CLI with `args` and `input` on stdin; returns stdout. */
export function cli(args, input = '') {
  const bin = process.env.LOCALDP_CLI;
  if (!bin) throw new Error('LOCALDP_CLI must point to the localdp binary');
  return execFileSync(bin, args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
}

export const CHROMIUM = {
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic',
  ],
};

export const ARTIFACTS = process.env.ARTIFACTS ?? join(process.cwd(), 'artifacts');

/** A Map behind an async get/set (each call yields to the event loop), with compareAndSet. */
export function memoryStore() {
  const map = new Map();
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  return {
    map,
    get: async (key) => (await tick(), map.get(key)),
    set: async (key, value) => void (await tick(), map.set(key, value)),
    async compareAndSet(key, expected, value) {
      await tick();
      if (map.get(key) !== expected) return false;
      map.set(key, value);
      return true;
    },
  };
}

/** A one-process LockManager: `request(name, cb)` runs callbacks of one name one at a time. */
export function fakeLocks() {
  const tails = new Map();
  return {
    request(name, callback) {
      const run = (tails.get(name) ?? Promise.resolve()).then(() => callback());
      tails.set(name, run.catch(() => {}));
      return run;
    },
  };
}
