// client.send in Node against a real collector: it resolves to the
// collector's answer, rejects with its reason (CollectorError) or says the
// collector could not be reached; a Client.open report serialized before it
// was awaited throws instead of sending "{}".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, asyncStorage } from 'localdp';
import { memoryStore, fakeLocks, startCollector, stopCollector } from './helpers.mjs';

const CONFIG = { protocol: 'grr', epsilon: 1, domain: ['red', 'green', 'blue'] };
let scratch;
let collector;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'localdp-send-'));
  writeFileSync(join(scratch, 'metrics.json'), JSON.stringify([{ name: 'colors', config: CONFIG }]));
  collector = await startCollector(['--db', join(scratch, 'send.sqlite'), '--metrics', join(scratch, 'metrics.json'),
    '--www', join(scratch, 'no-www'), '--pkg', join(scratch, 'no-pkg')]);
});

after(async () => {
  await stopCollector(collector);
  rmSync(scratch, { recursive: true, force: true });
});

const count = async () => (await (await fetch(`${collector.url}/api/metrics/colors`)).json()).n;
const open = (config) => Client.open(config, { storage: asyncStorage(memoryStore(), { locks: fakeLocks() }) });

test('send randomizes, posts and resolves to the collector\'s answer', async () => {
  const url = `${collector.url}/api/metrics/colors/reports`;
  assert.equal((await new Client(CONFIG).send(url, 'red')).accepted, 1);
  assert.equal((await (await open(CONFIG)).send(new URL(url), 'green')).accepted, 1);
  assert.equal(await count(), 2);
});

test('send rejects with the collector\'s reason, typed', async () => {
  const other = { ...CONFIG, epsilon: 2 }; // a report the metric does not take
  await assert.rejects(new Client(other).send(`${collector.url}/api/metrics/colors/reports`, 'red'), (e) =>
    e.name === 'CollectorError' && e.status === 400 && e.message === e.answer.error && /no report in the body is valid/.test(e.message));
  await assert.rejects(new Client(CONFIG).send(`${collector.url}/api/metrics/nothing/reports`, 'red'), (e) =>
    e.name === 'CollectorError' && e.status === 404);
  // What randomize throws is thrown before anything is posted.
  await assert.rejects(new Client(CONFIG).send(`${collector.url}/api/metrics/colors/reports`, 'purple'), RangeError);
  assert.equal(await count(), 2);
});

test('a collector that cannot be reached is a TypeError that says what to check', async () => {
  await assert.rejects(new Client(CONFIG).send('http://127.0.0.1:1/api/metrics/colors/reports', 'red'), (e) =>
    e instanceof TypeError && /could not be reached, or its answer could not be read/.test(e.message) && /--allow-origin/.test(e.message));
});

test('a pending report of Client.open throws when serialized: did you forget `await`?', async () => {
  const client = await open(CONFIG);
  const pending = client.randomize('red');
  assert.throws(() => JSON.stringify(pending), (e) => e instanceof TypeError && /did you forget `await`\?/.test(e.message));
  assert.equal(JSON.parse(JSON.stringify(await pending)).protocol, 'grr', 'the report itself serializes');
});

test('a failed send carries its report, to post again without spending budget again', async () => {
  const budget = await open({ ...CONFIG, budget: { epsilon: 2, window: '1d' } });
  const url = `${collector.url}/api/metrics/colors/reports`;
  const before = await count();
  const failures = await Promise.allSettled([
    budget.send('http://127.0.0.1:1/api/metrics/colors/reports', 'red'), // cannot be reached: a TypeError
    budget.send(`${collector.url}/api/metrics/nothing/reports`, 'blue'), // a 404: a CollectorError
  ]);
  const errors = failures.map((f) => f.reason);
  assert.ok(errors[0] instanceof TypeError && errors[1].name === 'CollectorError', String(errors));
  assert.equal(await budget.spent, 2, 'both reports were charged');
  for (const error of errors) {
    assert.equal(error.report.protocol, 'grr');
    const answer = await (await fetch(url, { method: 'POST', body: JSON.stringify(error.report) })).json();
    assert.equal(answer.accepted, 1);
  }
  assert.equal(await count(), before + 2);
  assert.equal(await budget.spent, 2, 'posting again spends nothing');
  // The synchronous Client's send too.
  await assert.rejects(new Client(CONFIG).send('http://127.0.0.1:1/api/metrics/colors/reports', 'red'), (e) =>
    e instanceof TypeError && e.report.protocol === 'grr');
});
