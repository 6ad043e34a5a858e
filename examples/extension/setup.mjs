// Copies the package's client build (`localdp/client/web`: its ES modules and
// its .wasm, nothing else) into ./localdp/, keeping the package's layout, and
// optionally sets the collector's address in settings.json.
// Run it where `localdp` is installed (or in this repository after `npm run build`):
//   node examples/extension/setup.mjs [--collector http://127.0.0.1:8080]
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

const here = dirname(new URL(import.meta.url).pathname);
const resolve = createRequire(pathToFileURL(join(process.cwd(), 'package.json'))).resolve;
const pkg = dirname(resolve('localdp/package.json'));
const exported = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).exports['./client/web'];
const entry = join(pkg, typeof exported === 'string' ? exported : exported.default);

// The entry and every file it reaches through relative imports or `new URL(…, import.meta.url)`.
const files = new Set();
const visit = (file) => {
  if (files.has(file)) return;
  files.add(file);
  if (!file.endsWith('.js') && !file.endsWith('.mjs')) return;
  const source = readFileSync(file, 'utf8');
  const imports = /(?:from\s*|import\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
  const assets = /new URL\(\s*['"]([^'":]+)['"]\s*,\s*import\.meta\.url/g;
  for (const [, path] of [...source.matchAll(imports), ...source.matchAll(assets)]) visit(join(dirname(file), path));
};
visit(entry);

const target = join(here, 'localdp');
rmSync(target, { recursive: true, force: true });
for (const file of files) {
  const to = join(target, relative(pkg, file));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(file, to);
}
console.log(`copied ${files.size} files of ${pkg} into ${target}: import ./localdp/${relative(pkg, entry)}`);

const i = process.argv.indexOf('--collector');
if (i > 0) writeFileSync(join(here, 'settings.json'), `${JSON.stringify({ collector: process.argv[i + 1] })}\n`);
