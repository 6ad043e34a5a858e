// Errors as codes: the client module's wasm throws its errors with a stable
// `code` and their `params`, and no message; the JS table (messages.mjs, as
// shipped: minified for the web, a CommonJS copy for Node) writes the
// message. fixtures/error-messages.json is the Rust side's catalogue: one
// error of every code, its parameters as the modules pass them, and the
// message Rust's `Display` writes (the CLI's text). A cargo test
// (`error::tests::error_catalogue`) keeps it equal to the Rust messages;
// here every code the client module can throw (all but the 4xx, which only
// aggregation throws) must come out of the table the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, ClientCore } from 'localdp/client';
import { ClientCore as FullClientCore } from 'localdp';

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve('localdp/package.json'));
const catalogue = JSON.parse(readFileSync(new URL('./fixtures/error-messages.json', import.meta.url), 'utf8'));
const tables = {
  'web (minified ES module)': (await import(pathToFileURL(join(packageDir, 'dist/client/web/messages.mjs')))).withMessage,
  'Node (CommonJS)': require(join(packageDir, 'dist/client/node/messages.cjs')).withMessage,
};

const clientCodes = catalogue.filter(({ code }) => code < 400 || code >= 500);

test('the catalogue lists every code once', () => {
  const codes = catalogue.map((e) => e.code);
  assert.ok(clientCodes.length >= 50, `${clientCodes.length} codes of the client`);
  assert.equal(new Set(codes).size, codes.length);
});

for (const [name, withMessage] of Object.entries(tables)) {
  test(`the JS table writes every code's Rust message: ${name}`, () => {
    const wrong = [];
    for (const { code, params, message } of clientCodes) {
      const error = withMessage(Object.assign(new RangeError(''), { code, params }));
      if (error.message !== message) wrong.push(`${code}: ${JSON.stringify(error.message)}, Rust writes ${JSON.stringify(message)}`);
    }
    assert.deepEqual(wrong, []);
  });

  test(`errors with a message or without a code pass through unchanged: ${name}`, () => {
    const storageError = Object.assign(new Error(''), { code: 22 }); // a DOMException's legacy code, no params
    assert.equal(withMessage(storageError).message, '');
    const full = Object.assign(new RangeError('from the full module'), { code: 104, params: [] });
    assert.equal(withMessage(full).message, 'from the full module');
    assert.equal(withMessage('text'), 'text');
    assert.equal(withMessage(Object.assign(new Error(''), { code: 420, params: [] })).message, 'localdp error 420');
  });
}

const SECRET = '00'.repeat(32);
const BAD_EPSILON = { protocol: 'grr', epsilon: 99, domain: 4 };
const RUST_MESSAGE = 'invalid configuration: epsilon of a frequency metric must be in [0.01, 30.0], got 99.0';

test("the client module's wasm carries the code and parameters, not the text; its Client writes the message", () => {
  const bare = (() => { try { new ClientCore(BAD_EPSILON, SECRET); } catch (e) { return e; } })();
  assert.ok(bare instanceof RangeError);
  assert.equal(bare.message, '');
  assert.equal(bare.code, 104);
  assert.deepEqual(bare.params, ['epsilon', '0.01', '30.0', '99.0', 'frequency']);
  assert.equal(bare.parameter, 'epsilon');
  assert.throws(() => new Client(BAD_EPSILON), (e) => e instanceof RangeError && e.message === RUST_MESSAGE && e.code === 104 && e.parameter === 'epsilon');
  // The stack's first line, which consoles print, carries the message too.
  assert.throws(() => new Client(BAD_EPSILON), (e) => e.stack.startsWith(`RangeError: ${RUST_MESSAGE}\n`));
  // The full module writes the same message itself.
  assert.throws(() => new FullClientCore(BAD_EPSILON, SECRET), (e) => e.message === RUST_MESSAGE && e.code === 104);
});

test('PrivacyBudgetExceeded keeps its name, numbers and message in the client module', () => {
  const client = new Client({ protocol: 'grr', epsilon: 1, domain: 4, budget: { epsilon: 1.5, window: '1d' } }, { now: () => 0 });
  client.randomize(1);
  assert.throws(() => client.randomize(1), (e) => e.name === 'PrivacyBudgetExceeded' && e.code === 300
    && e.cost === 1 && e.spent === 1 && e.budget === 1.5
    && e.message === 'privacy budget exceeded: this report would spend 1.0 more, with 1.0 of 1.5 spent in the window');
});
