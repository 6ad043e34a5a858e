// The import-cycle check (scripts/check-layers.mjs): green on every crate of
// the repository, and red on a copy of the library with one back edge added.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { checkCrate } from '../scripts/check-layers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const script = join(root, 'scripts', 'check-layers.mjs');
const run = (...dirs) => spawnSync(process.execPath, [script, ...dirs], { encoding: 'utf8' });

test('every crate of the repository is a DAG of files', () => {
  const result = run();
  assert.equal(result.status, 0, result.stderr);
  for (const crate of ['core/src', 'src', 'wasm/client/src', 'wasm/full/src', 'cli/src', 'columnar/src', 'engines/src', 'python/src']) {
    assert.match(result.stdout, new RegExp(`layers: ${crate}: \\d+ files, \\d+ edges, no cycle`));
  }
});

test('one back edge in the device crate is a cycle, named with its path', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(root, 'core', 'src'), join(dir, 'src'), { recursive: true });
  // The lowest file (text!) naming the metric registry, high above it.
  const text = join(dir, 'src', 'text.rs');
  writeFileSync(text, readFileSync(text, 'utf8') + '\n#[allow(unused)]\nuse crate::metric::registry::Metric;\n');
  const result = run(join(dir, 'src'));
  assert.equal(result.status, 1);
  assert.match(result.stderr, /an import cycle through \d+ files/);
  assert.match(result.stderr, /text\.rs -> metric\/registry\.rs \(use crate::metric::registry::Metric\)/);
});

test('what counts as naming a file, and what does not', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const src = join(dir, 'src');
  const write = (path, text) => {
    mkdirSync(dirname(join(src, path)), { recursive: true });
    writeFileSync(join(src, path), text);
  };
  write('lib.rs', 'mod low;\nmod family;\npub use family::Thing;\n');
  write('low.rs', [
    '// crate::family::Thing in a comment',
    'const S: &str = "crate::family::Thing";',
    '#[cfg(test)]\nmod tests {\n    use crate::family::Thing;\n}',
    'pub fn f() {}',
  ].join('\n'));
  write('family/mod.rs', 'mod shared;\nmod child;\npub use child::Thing;\n');
  write('family/shared.rs', 'use crate::low::f;\npub(super) fn g() { f() }\n');
  write('family/child.rs', 'use super::shared::g;\npub struct Thing;\nfn h() { g() }\n');
  assert.deepEqual(checkCrate(src).components, [], 'comments, strings and unit tests name nothing');
  const named = (from) => [...checkCrate(src).edges.get(join(src, from)).keys()].map((f) => f.slice(src.length + 1)).sort();
  assert.deepEqual(named('family/child.rs'), ['family/shared.rs']);
  // A re-export (`pub use`) is the crate's public face: it names the file
  // it re-exports from, as written.
  assert.deepEqual(named('lib.rs'), ['family/mod.rs', 'low.rs']);
  assert.deepEqual(checkCrate(src).throughReexports, []);
  // A path is read as written: a child that names an item through its
  // parent's re-export names its parent, which closes a cycle, and the
  // path is reported with the one that names the defining file.
  write('family/shared.rs', 'use crate::low::f;\nuse super::Thing;\npub(super) fn g() { f() }\n');
  assert.deepEqual(named('family/shared.rs'), ['family/mod.rs', 'low.rs']);
  assert.equal(checkCrate(src).components.length, 1);
  assert.deepEqual(
    checkCrate(src).throughReexports.map(({ file, path, direct }) => [file.slice(src.length + 1), path, direct]),
    [['family/shared.rs', 'super::Thing', 'crate::family::child::Thing']],
  );
  // Without the cycle (a file outside the module), the path through the
  // re-export alone fails the check.
  write('family/shared.rs', 'use crate::low::f;\npub(super) fn g() { f() }\n');
  write('low.rs', 'pub fn f() {}\n');
  write('user.rs', 'use crate::family::Thing;\nfn u(_: Thing) {}\n');
  write('lib.rs', 'mod low;\nmod family;\nmod user;\npub use family::Thing;\n');
  assert.deepEqual(checkCrate(src).components, []);
  const result = run(src);
  assert.equal(result.status, 1);
  assert.match(result.stderr, /user\.rs names crate::family::Thing through family\/mod\.rs's re-export: name it crate::family::child::Thing/);
  // A re-export under another name (`as`) is found by that name.
  write('user.rs', 'fn u(_: crate::Other) {}\n');
  write('lib.rs', 'mod low;\nmod family;\nmod user;\npub use family::Thing as Other;\n');
  assert.deepEqual(
    checkCrate(src).throughReexports.map(({ path, direct }) => [path, direct]),
    [['crate::Other', 'crate::family::child::Thing']],
  );
});
