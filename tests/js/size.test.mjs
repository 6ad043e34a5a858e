// The size guard (as Sentry's size limits work): the files `localdp/client/web`
// loads and the full module's wasm, raw and gzip -9'd one file at a time,
// must not grow past size-budget.json, the sizes reached when it was last
// set, plus its layout_slack (a build in another directory lays the module
// out a few bytes differently). A change that needs more bytes raises the
// budget in the same commit, where the reviewer sees it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));
const budget = JSON.parse(readFileSync(new URL('./size-budget.json', import.meta.url), 'utf8'));

const allowed = (limit) => Math.floor(limit * (1 + budget.layout_slack));

for (const [name, { files, raw: rawLimit, gzip: gzipLimit }] of Object.entries(budget.limits)) {
  const [raw, gzip] = [allowed(rawLimit), allowed(gzipLimit)];
  test(`${name}: at most ${raw} bytes raw, ${gzip} bytes gzipped`, () => {
    let rawTotal = 0;
    let gzipTotal = 0;
    for (const file of files) {
      const path = join(packageDir, file);
      rawTotal += statSync(path).size;
      gzipTotal += execFileSync('gzip', ['-9c', path], { maxBuffer: 1 << 26 }).length;
    }
    assert.ok(gzipTotal <= gzip, `${name}: ${gzipTotal} bytes gzipped, budget ${gzipLimit} + layout slack`);
    assert.ok(rawTotal <= raw, `${name}: ${rawTotal} bytes raw, budget ${rawLimit} + layout slack`);
  });
}
