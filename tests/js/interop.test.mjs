// Reports made by the package are aggregated by the CLI and the reverse, with
// identical estimates, to the last bit, for identical report sets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Aggregator } from 'localdp';
import { cli } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'localdp-interop-'));
const CONFIGS = [
  ...['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss', 'auto'].map((protocol) => ({
    protocol, epsilon: 1.25, domain: ['chrome', 'safari', 'edge', 'firefox', 'other'],
  })),
  { protocol: 'olh', epsilon: 0.7, domain: 64 },
  { protocol: 'auto', epsilon: 3, domain: 1000 },
  ...['duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean', 'auto'].map((protocol) => ({
    protocol, epsilon: 2, range: [0, 250],
  })),
  { protocol: 'auto', epsilon: 6, range: [[0, 100], [-5, 5], [1000, 2000]] },
];

/** The j-th value of a config's test data: labels, integers, numbers or records. */
function valueOf(config, j) {
  if (Array.isArray(config.range?.[0])) return config.range.map(([lo, hi], a) => lo + ((j * (a + 3)) % 97) * (hi - lo) / 96);
  if (config.range) return config.range[0] + ((j * j) % 251) * 1.01;
  return Array.isArray(config.domain) ? config.domain[(j * j) % config.domain.length] : (j * 7) % config.domain;
}

CONFIGS.forEach((config, i) => {
  const size = config.range ? `range=${JSON.stringify(config.range)}` : `d=${Array.isArray(config.domain) ? config.domain.length : config.domain}`;
  const name = `${config.protocol} ε=${config.epsilon} ${size}`;
  const file = join(dir, `config-${i}.json`);
  writeFileSync(file, JSON.stringify(config));
  // Records are written one per line as comma-separated numbers, which is
  // what an array's toString gives.
  const values = Array.from({ length: 3000 }, (_, j) => valueOf(config, j));

  test(`${name}: JS reports → CLI estimate equals JS estimate`, () => {
    const client = new Client(config);
    const reports = values.map((v) => client.randomize(v));
    const lines = reports.map((r) => JSON.stringify(r)).join('\n') + '\n{"broken": true}\n';
    for (const post of config.range ? ['none'] : ['none', 'norm-sub', 'project']) {
      const fromCli = JSON.parse(cli(['aggregate', '--config', file, '--post', post], lines));
      const aggregator = new Aggregator(config);
      aggregator.addMany(lines.trim().split('\n'));
      assert.deepEqual(aggregator.estimate({ post }), fromCli);
    }
  });

  test(`${name}: CLI reports → JS estimate equals CLI estimate`, () => {
    const lines = cli(['randomize', '--config', file, '--seed', String(i)], values.join('\n') + '\n');
    const aggregator = new Aggregator(config);
    for (const line of lines.trim().split('\n')) aggregator.add(JSON.parse(line));
    assert.deepEqual(aggregator.estimate(), JSON.parse(cli(['aggregate', '--config', file], lines)));
    assert.equal(new Client(config).protocol, JSON.parse(lines.split('\n')[0]).protocol, 'auto resolves identically');
  });
});
