// The size guard (as Sentry's size limits work): the files `localdp/client/web`
// loads and the full module's wasm, raw and gzip -9'd one file at a time,
// must not grow past size-budget.json, the sizes reached when it was last
// set, plus its layout_slack (a build in another directory lays the module
// out a few bytes differently). A change that needs more bytes raises the
// budget in the same commit, where the reviewer sees it. The budget holds
// the build of one wasm route, `budget.route` (scripts/setup.sh): the
// package's build (scripts/build.sh) writes its route to target/dist.route,
// which scripts/test-js.sh passes as LOCALDP_BUILT_ROUTE; a build by another
// route only reports its sizes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const packageDir = dirname(createRequire(import.meta.url).resolve('localdp/package.json'));
const budget = JSON.parse(readFileSync(new URL('./size-budget.json', import.meta.url), 'utf8'));

const allowed = (limit) => Math.floor(limit * (1 + budget.layout_slack));
const route = process.env.LOCALDP_BUILT_ROUTE || budget.route;

for (const [name, { files, raw: rawLimit, gzip: gzipLimit }] of Object.entries(budget.limits)) {
  const [raw, gzip] = [allowed(rawLimit), allowed(gzipLimit)];
  test(`${name}: at most ${raw} bytes raw, ${gzip} bytes gzipped`, (t) => {
    let rawTotal = 0;
    let gzipTotal = 0;
    for (const file of files) {
      const path = join(packageDir, file);
      rawTotal += statSync(path).size;
      gzipTotal += execFileSync('gzip', ['-9c', path], { maxBuffer: 1 << 26 }).length;
    }
    if (route !== budget.route) {
      t.skip(`built by route ${route}: ${rawTotal} bytes raw, ${gzipTotal} gzipped; the budget holds route ${budget.route}'s build`);
      return;
    }
    assert.ok(gzipTotal <= gzip, `${name}: ${gzipTotal} bytes gzipped, budget ${gzipLimit} + layout slack`);
    assert.ok(rawTotal <= raw, `${name}: ${rawTotal} bytes raw, budget ${rawLimit} + layout slack`);
  });
}
