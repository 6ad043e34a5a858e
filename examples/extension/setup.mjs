// Makes a copy of this example extension in OUT, ready to load unpacked: the
// extension's own files, the package's client build for the families that
// metrics.json names (`localdp/client/web/FAMILY`: its ES modules and its
// wasm, nothing else: an MV3 extension may load no remote code, so it ships
// every module it loads) under OUT/localdp/ in the package's layout, and
// the collector's address in OUT/settings.json. This folder itself is never
// written to.
//   node node_modules/localdp/examples/extension/setup.mjs OUT [--collector http://127.0.0.1:8080]
// (in the repository, after `npm run build`: node examples/extension/setup.mjs OUT)
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--collector');
const collector = at >= 0 ? args.splice(at, 2)[1] : 'http://127.0.0.1:8080';
if (args.length !== 1 || !collector) {
  console.error('usage: node setup.mjs OUT [--collector URL]');
  process.exit(2);
}
const out = resolve(args[0]);
if (out === here) {
  console.error('setup.mjs: OUT must be another folder than the example itself');
  process.exit(2);
}
if (existsSync(out)) {
  console.error(`setup.mjs: ${out} exists; give a new folder`);
  process.exit(2);
}

// The package this example ships in (the repository, or node_modules/localdp).
const pkg = resolve(here, '../..');
const web = join(pkg, 'dist/client/web');
if (!existsSync(join(web, 'families.js'))) {
  console.error(`setup.mjs: no client build in ${web} (in the repository, run npm run build first)`);
  process.exit(1);
}

// The entry of each family the metrics name (localdp/client/web/FAMILY:
// families.js places a config as Client.open does).
const { familyOf, composes } = await import(pathToFileURL(join(web, 'families.js')));
const entries = JSON.parse(readFileSync(join(here, 'metrics.json'), 'utf8')).map(({ name, config }) => {
  const family = familyOf(config);
  if (composes(config)) {
    // Only the module of every family charges a δ, and a service worker cannot import() it from a family's entry.
    console.error(`setup.mjs: the budget of metric ${name} has "delta": a service worker imports localdp/client/web for it (the module of every family), not a family's entry`);
    process.exit(1);
  }
  if (family === undefined) {
    console.error(`setup.mjs: the config of metric ${name} names no protocol of any family`);
    process.exit(1);
  }
  return join(web, 'families', family, 'localdp.js');
});
// background.js imports the entry of its metric's family: the one shipped.
const background = readFileSync(join(here, 'background.js'), 'utf8');
for (const entry of entries) {
  const path = relative(pkg, entry);
  if (!background.includes(`./localdp/${path}`)) {
    console.error(`setup.mjs: metrics.json needs ${path}; make background.js import './localdp/${path}'`);
    process.exit(1);
  }
}

// The entries and every file they reach through static relative imports or `new URL(…, import.meta.url)`.
// Not through import(), which a service worker may not call: the family entry's one loads the module of
// every family to convert the JSON state of an earlier release, which an extension that shipped one
// converts by opening its clients once from a page that imports localdp/client/web.
const files = new Set();
const visit = (file) => {
  if (files.has(file)) return;
  files.add(file);
  if (!file.endsWith('.js') && !file.endsWith('.mjs')) return;
  const source = readFileSync(file, 'utf8');
  const imports = /(?:from\s*|import\s*)['"`](\.{1,2}\/[^'"`]+)['"`]/g;
  const assets = /new URL\(\s*['"`]([^'"`:]+)['"`]\s*,\s*import\.meta\.url/g;
  for (const [, path] of [...source.matchAll(imports), ...source.matchAll(assets)]) visit(join(dirname(file), path));
};
entries.forEach(visit);

mkdirSync(out, { recursive: true });
for (const name of ['manifest.json', 'background.js', 'metrics.json']) copyFileSync(join(here, name), join(out, name));
writeFileSync(join(out, 'settings.json'), `${JSON.stringify({ collector })}\n`);
for (const file of files) {
  const to = join(out, 'localdp', relative(pkg, file));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(file, to);
}
console.log(`${out}: the extension, with ${files.size} files of the client build; load it unpacked`);
