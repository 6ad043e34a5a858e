// The web entries (`localdp/web`, `localdp/client/web` and the bundler
// entries over them), in Node: importing them runs nothing (no top-level
// await), a call before init() says what to call, and after init() or
// initSync() everything works; `Client.open` initializes by itself (in a
// browser: vite.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve('localdp/package.json'));
const NOT_INITIALIZED = {
  name: 'Error',
  message: 'localdp is not initialized: call `await init()` (the default export) first, or create the client with `await Client.open(config)`',
};
const config = { protocol: 'grr', epsilon: 1, domain: ['a', 'b', 'c'] };

test('the bundler entries import without running anything, and export init', async () => {
  for (const entry of ['dist/bundler/index.js', 'dist/client/bundler/index.js']) {
    const module = await import(join(packageDir, entry));
    assert.equal(typeof module.default, 'function', entry);
    assert.equal(typeof module.Client.open, 'function', entry);
  }
});

test("Node's ESM entries export an init() that resolves, for code written for the web", async () => {
  for (const entry of ['localdp', 'localdp/client']) {
    const module = await import(entry);
    assert.equal(await module.default(), undefined, entry);
    assert.equal(new module.Client(config).randomize('a').protocol, 'grr', entry);
  }
});

test('localdp/web before init: Client, Aggregator and protocols say what to call; after init they work', async () => {
  const web = await import('localdp/web');
  assert.throws(() => new web.Client(config), NOT_INITIALIZED);
  assert.throws(() => new web.Aggregator(config), NOT_INITIALIZED);
  assert.throws(() => web.protocols(), NOT_INITIALIZED);
  await web.default({ module_or_path: readFileSync(require.resolve('localdp/web/localdp_bg.wasm')) });
  const aggregator = new web.Aggregator(config);
  aggregator.add(new web.Client(config).randomize('b'));
  assert.equal(aggregator.n, 1);
  // Client.open's own init() finds the module initialized.
  assert.equal((await (await web.Client.open(config)).randomize('c')).protocol, 'grr');
  assert.deepEqual(web.protocols().distribution, ['square_wave', 'hierarchical']);
});

test('localdp/client/web before init says what to call; after initSync it works', async () => {
  const web = await import('localdp/client/web');
  assert.throws(() => new web.Client(config), NOT_INITIALIZED);
  web.initSync({ module: readFileSync(require.resolve('localdp/client/web/localdp_client_bg.wasm')) });
  const client = new web.Client(config);
  // A second init returns the instance already there: the client keeps working.
  await web.default();
  assert.equal(client.randomize('a').protocol, 'grr');
});

test('localdp/client/web/FAMILY: the entry of one family, before init says what to call; after initSync it serves that family alone', async () => {
  const numeric = await import('localdp/client/web/numeric');
  const timing = { protocol: 'duchi', epsilon: 1, range: [0, 1] };
  assert.throws(() => new numeric.Client(timing), NOT_INITIALIZED);
  numeric.initSync({ module: readFileSync(join(packageDir, 'dist/client/web/families/numeric/localdp_client_bg.wasm')) });
  assert.equal(new numeric.Client(timing).randomize(0.5).protocol, 'duchi');
  assert.throws(() => new numeric.Client(config), (e) => e.code === 100 && e.key === 'protocol');
  assert.equal(typeof numeric.chromeStorage, 'function');
});
