// Node keeps its state: `fileStorage(path)` (Client.open's default in Node)
// shared by processes of one machine, its lock (and a crashed holder's),
// and the memory-only fallback of the web entry, said once on stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, fileStorage } from 'localdp';

const here = fileURLToPath(new URL('.', import.meta.url));
const LABEL = 'secret-label-7c1f';
// A budget of 5 reports a day, memoized: shared by every process on the file.
const BUDGET = { protocol: 'grr', epsilon: 1, domain: 8, budget: { epsilon: 5, window: '1d' } };
const MEMO = { protocol: 'olh', epsilon: 1, domain: [LABEL, 'other'], memoize: true };

/** A fresh folder for one test. */
function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'localdp-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `code` (an ES module importing localdp) in its own Node process; resolves to { code, stdout, stderr }. */
function node(code, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: here, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** One process's part: 10 concurrent reports against the shared budget, and the memoized report of LABEL. */
const SPENDER = (path) => `
import { Client, fileStorage } from 'localdp';
const storage = fileStorage(${JSON.stringify(path)});
const [budget, memo] = await Promise.all([Client.open(${JSON.stringify(BUDGET)}, { storage }), Client.open(${JSON.stringify(MEMO)}, { storage })]);
const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => budget.randomize(3)));
const refused = outcomes.filter((o) => o.status === 'rejected');
if (refused.some((o) => o.reason.name !== 'PrivacyBudgetExceeded')) throw refused[0].reason;
console.log(JSON.stringify({ sent: outcomes.length - refused.length, memo: await memo.randomize(${JSON.stringify(LABEL)}) }));
`;

test('two Node processes on one file are one device: one budget, one memo, no raw value stored', async (t) => {
  const path = join(scratch(t), 'state', 'localdp.json');
  const runs = await Promise.all([node(SPENDER(path)), node(SPENDER(path))]);
  for (const run of runs) assert.equal(run.status, 0, run.stderr);
  const [a, b] = runs.map((run) => JSON.parse(run.stdout));
  assert.equal(a.sent + b.sent, 5, `the budget of 5 is spent once across both processes (${a.sent} + ${b.sent})`);
  assert.deepEqual(a.memo, b.memo, 'one permanent response for the value');
  const text = readFileSync(path, 'utf8');
  assert.ok(!text.includes(LABEL), 'no raw value in the file');
  assert.match(JSON.parse(text)['localdp:secret'], /^[0-9a-f]{64}$/);
  assert.equal(statSync(path).mode & 0o777, 0o600, 'the file holding the secret is private');
  assert.ok(!existsSync(`${path}.lock`), 'the lock is released');
  // A third process, later: the budget is still spent.
  const later = await node(SPENDER(path));
  assert.equal(JSON.parse(later.stdout).sent, 0);
});

test('a lock left by a process that is gone is broken; a live one is waited for', async (t) => {
  const path = join(scratch(t), 'state.json');
  const gone = spawnSync(process.execPath, ['-e', '']).pid;
  writeFileSync(`${path}.lock`, `${gone} left-by-a-crash`);
  const client = await Client.open(BUDGET, { storage: fileStorage(path) });
  await client.randomize(1);
  assert.equal(await client.spent, 1);
  assert.ok(!existsSync(`${path}.lock`));
  // Held by this (live) process: an update waits until it is released.
  writeFileSync(`${path}.lock`, `${process.pid} held`);
  let done = false;
  const pending = client.randomize(1).then(() => (done = true));
  // As long as a whole update of another file takes, it does not get through.
  await fileStorage(join(dirname(path), 'other.json')).update(['k'], () => ({ k: 'v' }));
  assert.equal(done, false, 'waits for the lock');
  rmSync(`${path}.lock`);
  await pending;
  assert.equal(await client.spent, 2);
});

test("a lock of another host, or one a crash left empty, is waited for until it is a minute old, then broken", async (t) => {
  const path = join(scratch(t), 'state.json');
  const client = await Client.open(BUDGET, { storage: fileStorage(path) });
  const gone = spawnSync(process.execPath, ['-e', '']).pid;
  // Another host's process ids mean nothing here (a container, a shared folder): a dead one here may run there.
  for (const held of [`${gone} another-host ab12cd`, '']) {
    const spent = await client.spent;
    writeFileSync(`${path}.lock`, held);
    let done = false;
    const pending = client.randomize(1).then(() => (done = true));
    await fileStorage(join(dirname(path), 'other.json')).update(['k'], () => ({ k: 'v' }));
    assert.equal(done, false, `waits for the lock ${JSON.stringify(held)}`);
    assert.equal(readFileSync(`${path}.lock`, 'utf8'), held, 'the lock is not broken');
    const old = new Date(Date.now() - 61_000);
    utimesSync(`${path}.lock`, old, old);
    await pending;
    assert.equal(await client.spent, spent + 1);
    assert.ok(!existsSync(`${path}.lock`));
  }
});

test('a file that is not a JSON object is a reset, then overwritten', async (t) => {
  const path = join(scratch(t), 'state.json');
  writeFileSync(path, '{"localdp:secret": tru');
  const client = await Client.open(BUDGET, { storage: fileStorage(path) });
  assert.equal(client.resets, 1);
  assert.equal(client.persistent, true);
  const stored = JSON.parse(readFileSync(path, 'utf8'));
  assert.deepEqual(Object.entries(stored).filter(([key]) => key.startsWith('localdp:resets:')).map(([, n]) => n), ['1']);
  assert.throws(() => fileStorage(''), TypeError);
});

test("Client.open in Node keeps its state in ~/.localdp/state.json by default", async (t) => {
  const home = scratch(t);
  const code = `import { Client } from 'localdp';
const client = await Client.open(${JSON.stringify(BUDGET)});
await client.randomize(1);
console.log(JSON.stringify({ persistent: client.persistent, spent: await client.spent }));`;
  const first = await node(code, { HOME: home });
  assert.equal(first.status, 0, first.stderr);
  assert.deepEqual(JSON.parse(first.stdout), { persistent: true, spent: 1 });
  assert.equal(first.stderr, '', 'nothing to warn about');
  assert.ok(existsSync(join(home, '.localdp', 'state.json')));
  // A restart: the ledger is still there.
  assert.deepEqual(JSON.parse((await node(code, { HOME: home })).stdout), { persistent: true, spent: 2 });
});

test('Client.open in Node keeps its state in memory, said once with why, where ~/.localdp cannot be made', async (t) => {
  // HOME a regular file: mkdir fails (ENOTDIR) even as root, where a 0555 folder would not stop it.
  const home = join(scratch(t), 'a-file');
  writeFileSync(home, '');
  const run = await node(`import { Client } from 'localdp';
const clients = [await Client.open(${JSON.stringify(BUDGET)}), await Client.open(${JSON.stringify(MEMO)})];
await clients[0].randomize(1);
console.log(JSON.stringify({ persistent: clients.map((c) => c.persistent), spent: await clients[0].spent }));`, { HOME: home });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { persistent: [false, false], spent: 1 });
  assert.equal(run.stderr.match(/memos and the privacy ledger last only as long as each client/g)?.length, 1, run.stderr);
  assert.ok(run.stderr.includes(`${join(home, '.localdp')} cannot be created or written (ENOTDIR)`), run.stderr);
});

test('a client without a storage (the web entry in Node) says so once on stderr', async () => {
  const run = await node(`import init, { Client } from 'localdp/web';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
await init({ module_or_path: readFileSync(createRequire(import.meta.url).resolve('localdp/web/localdp_bg.wasm')) });
const clients = [await Client.open(${JSON.stringify(BUDGET)}), await Client.open(${JSON.stringify(MEMO)})];
console.log(JSON.stringify(clients.map((c) => c.persistent)));`);
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), [false, false]);
  assert.equal(run.stderr.match(/memos and the privacy ledger last only as long as each client/g)?.length, 1, run.stderr);
  assert.match(run.stderr, /fileStorage\(path\)/);
});
