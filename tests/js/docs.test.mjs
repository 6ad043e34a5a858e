// Every fenced code block of the READMEs and docs/ runs, or is taken from a
// file a test runs (CONTRIBUTING.md, "Documentation"):
//   js, mjs   run in Node against the packed package, with a collector
//             started on the demo's metrics (http://127.0.0.1:8080 in a block,
//             and a relative URL, are that collector); any answer of the
//             collector >= 400 fails the block;
//   sh        run by bash, in order, in one scratch folder per page, with the
//             CLI as `localdp` (`localdp serve` and `shuffle` are started, their URL awaited,
//             then stopped) and `npm` checked against package.json's scripts;
//   json      a config, configs one per line, or a metrics file: every config
//             is built by the package's Aggregator;
//   rust      doctests: the page must be included by src/lib.rs;
//   sql       the one block, docs/sql.md's, is run as written by the engines'
//             test the_sql_block_of_docs_sql_md_runs_as_written;
//   python    run by python/tests/test_docs.py: each page's blocks in
//             order, in one fresh folder, after the page's sh blocks;
//   <!-- file: PATH --> before a block: its lines appear in PATH, in order;
//   text: not run (output, third-party configuration).
// Also: the packed package's README is js/README.md, and every relative link
// of these pages points to a file that exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Aggregator } from 'localdp';
import { startCollector, stopCollector } from './helpers.mjs';

// The repository, from tests/js/ or from scripts/test-js.sh's target/js-scratch/.
const root = fileURLToPath(new URL('../../', import.meta.url));
const here = dirname(fileURLToPath(import.meta.url));
const PAGES = ['README.md', 'CONTRIBUTING.md', 'js/README.md', 'examples/extension/README.md',
  ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const NOT_RUN = new Set(['text']);
const DEFAULT_URL = 'http://127.0.0.1:8080';

/** The fenced blocks of a page: { page, line, lang, code, file } (`file`: a `<!-- file: PATH -->` just before). */
function blocks(page) {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, lang] = open;
    const start = i;
    const body = [];
    for (i++; i < lines.length && !new RegExp(`^${indent}\`\`\`\\s*$`).test(lines[i]); i++) body.push(lines[i].slice(indent.length));
    assert.ok(i < lines.length, `${page}:${start + 1}: a block that is never closed`);
    const before = lines.slice(0, start).reverse().find((l) => l.trim() !== '') ?? '';
    const file = /^\s*<!-- file: (\S+) -->\s*$/.exec(before)?.[1];
    found.push({ page, line: start + 1, lang, code: body.join('\n'), file });
  }
  return found;
}

const ALL = PAGES.flatMap(blocks);
const where = (b) => `${b.page}:${b.line}`;

test('every block has a language this test knows', () => {
  for (const b of ALL) {
    assert.notEqual(b.lang, '', `${where(b)}: a block without a language (use text for output)`);
    if (!b.file) assert.ok(['js', 'mjs', 'sh', 'json', 'rust', 'sql', 'python', ...NOT_RUN].includes(b.lang), `${where(b)}: unknown language ${b.lang}`);
  }
});

test('the one sql block is docs/sql.md\'s, which the engines\' test runs', () => {
  const sql = ALL.filter((b) => b.lang === 'sql' && !b.file);
  assert.deepEqual(sql.map((b) => b.page), ['docs/sql.md'], 'a new sql block needs a test that runs it');
  const engines = readFileSync(join(root, 'engines/tests/datafusion.rs'), 'utf8');
  assert.ok(engines.includes('include_str!("../../docs/sql.md")'), 'engines/tests/datafusion.rs runs the block');
});

test('blocks marked <!-- file: PATH --> are taken from PATH', () => {
  for (const b of ALL.filter((b) => b.file)) {
    const source = readFileSync(join(root, b.file), 'utf8').split('\n').map((l) => l.trim());
    let at = 0;
    for (const line of b.code.split('\n').map((l) => l.trim()).filter(Boolean)) {
      const next = source.indexOf(line, at);
      assert.ok(next >= 0, `${where(b)}: not in ${b.file} (in this order): ${line}`);
      at = next + 1;
    }
  }
});

test('json blocks are configs the Aggregator builds', () => {
  const json = ALL.filter((b) => b.lang === 'json' && !b.file);
  assert.ok(json.length >= 4, `${json.length} json blocks`);
  for (const b of json) {
    let values;
    try {
      values = [JSON.parse(b.code)];
    } catch {
      values = b.code.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    }
    for (const value of values) {
      const configs = Array.isArray(value) ? value.map((m) => (assert.match(m.name, /^[A-Za-z0-9_-]{1,64}$/), m.config)) : [value];
      for (const config of configs) assert.doesNotThrow(() => new Aggregator(config), where(b));
    }
  }
});

test('pages with rust blocks are doctests of the library', () => {
  const lib = readFileSync(join(root, 'src/lib.rs'), 'utf8');
  const pages = new Set(ALL.filter((b) => b.lang === 'rust').map((b) => b.page));
  assert.ok(pages.size > 0);
  for (const page of pages) assert.ok(lib.includes(`include_str!("../${page}")`), `${page} holds Rust blocks: include it in src/lib.rs`);
});

test('relative links point to files that exist', () => {
  for (const page of PAGES) {
    const text = readFileSync(join(root, page), 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
      const path = relative(root, resolve(dirname(join(root, page)), target.split('#')[0]));
      assert.ok(existsSync(join(root, path)), `${page}: a link to ${target}, which does not exist`);
    }
  }
});

test("the packed package's README is js/README.md, stands alone, and it ships the extension example", () => {
  const installed = join(here, 'node_modules/localdp');
  const readme = readFileSync(join(installed, 'README.md'), 'utf8');
  assert.equal(readme, readFileSync(join(root, 'js/README.md'), 'utf8'));
  // On npm, a relative link leads nowhere: every link is absolute (its blocks run in 'js and sh blocks run').
  const relative = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^https:\/\//.test(t));
  assert.deepEqual(relative, []);
  const repository = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).repository.url;
  for (const [, link] of readme.matchAll(/\]\((https:[^)\s]+)\)/g)) {
    assert.ok(repository.includes(new URL(link).host), `${link}: the repository's host`);
    const file = /\/blob\/main\/([^#]+)/.exec(link)?.[1];
    if (file) assert.ok(existsSync(join(root, file)), `${link}: no ${file} in the repository`);
  }
  // The sizes are the build's, and give what a page of each family loads.
  const sizes = /<!-- sizes: written by scripts\/build.sh -->([^]*?)<!-- end of sizes -->/.exec(readme)?.[1] ?? '';
  for (const family of ['grr', 'frequency', 'numeric', 'rappor', 'heavy', 'distribution', 'key_value', 'marginals']) {
    assert.match(sizes, new RegExp(`\\| a \`${family}\` metric \\| \\d+ \\| \\d+ \\| \\d+ \\| \\d+ \\|`), family);
  }
  assert.match(sizes, /\| every family \(`init\(\)`\) \| \d+ \| \d+ \|/);
  assert.ok(existsSync(join(installed, 'examples/extension/setup.mjs')));
});

// What a block in Node lacks of a page: relative URLs resolve against the
// collector, file: URLs (the web builds' wasm) are read from disk, and
// navigator.sendBeacon posts; any answer >= 400 of the collector fails.
const SHIM = `
import { readFile } from 'node:fs/promises';
const base = process.env.LOCALDP_COLLECTOR + '/';
const fetchUrl = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(String(input), base);
  if (url.protocol === 'file:') return new Response(await readFile(url), { headers: { 'content-type': 'application/wasm' } });
  const response = await fetchUrl(url, init);
  if (response.status >= 400) {
    console.error(\`\${init?.method ?? 'GET'} \${url.pathname}: \${response.status} \${await response.clone().text()}\`);
    process.exitCode = 1;
  }
  return response;
};
globalThis.self = globalThis;
Object.defineProperty(globalThis, 'navigator', { value: { userAgent: 'Mozilla/5.0 Firefox/140.0', ...globalThis.navigator,
  sendBeacon: (url, body) => (fetch(url, { method: 'POST', body }), true) } });
`;

/** Runs `blocks` of one page with the collector at `url` in a fresh folder; returns the failures. */
function runPage(page, pageBlocks, url) {
  const dir = mkdtempSync(join(here, '.docs-'));
  const failures = [];
  try {
    const bin = join(dir, '.bin');
    mkdirSync(bin);
    symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, '.shim.mjs'), SHIM);
    writeFileSync(join(bin, 'localdp'), `#!/usr/bin/env bash
# The CLI; the servers (\`serve\`, \`shuffle\`) are started on a free port, their URL awaited, then stopped.
case "\${1:-}" in serve|shuffle) ;; *) exec "$LOCALDP_CLI" "$@";; esac
command=$1; shift; args=()
while [ $# -gt 0 ]; do case $1 in --port) shift 2;; *) args+=("$1"); shift;; esac; done
coproc SERVE { exec "$LOCALDP_CLI" "$command" --port 0 "\${args[@]}" 2>.serve.err; }
read -r -t 60 url <&"\${SERVE[0]}" || { cat .serve.err >&2; exit 1; }
kill "$SERVE_PID"; wait "$SERVE_PID" || true
echo "localdp $command listened at $url" >&2
`);
    writeFileSync(join(bin, 'npm'), `#!/usr/bin/env bash
# npm in a block: the script it names must exist in the repository's package.json (not run here).
script=$1; [ "$1" = run ] && script=$2
node -e 'process.exit(require(process.argv[1]).scripts[process.argv[2]] ? 0 : 1)' "${join(root, 'package.json')}" "$script" \\
  || { echo "npm: no script $script in package.json" >&2; exit 1; }
`);
    for (const f of ['localdp', 'npm']) chmodSync(join(bin, f), 0o755);
    // HOME: Client.open's file in Node (~/.localdp/state.json) stays in the scratch folder.
    const env = { ...process.env, HOME: dir, PATH: `${bin}:${process.env.PATH}`, LOCALDP_COLLECTOR: url };
    for (const [i, b] of pageBlocks.entries()) {
      const code = b.code.replaceAll(DEFAULT_URL, url).replaceAll("'/node_modules/", `'${join(dir, 'node_modules')}/`);
      let run;
      if (b.lang === 'sh') {
        run = spawnSync('bash', ['-euo', 'pipefail', '-c', code], { cwd: dir, env, encoding: 'utf8', timeout: 120000 });
      } else {
        const file = join(dir, `.block-${i}.mjs`);
        writeFileSync(file, code);
        run = spawnSync(process.execPath, ['--import', join(dir, '.shim.mjs'), file], { cwd: dir, env, encoding: 'utf8', timeout: 60000 });
      }
      if (run.status !== 0) failures.push(`${where(b)} (${b.lang}) failed (${run.status ?? run.signal}):\n${run.stderr}${run.stdout}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return failures;
}

test('js and sh blocks run', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'localdp-docs-'));
  const collector = await startCollector(['--db', join(scratch, 'db.sqlite'), '--metrics', join(root, 'www/metrics.json')]);
  try {
    // One report for each of the demo's metrics, so exports and estimates have something.
    execFileSync(process.execPath, ['--input-type=module', '-e', `
      import { Client } from 'localdp';
      const { metrics } = await (await fetch('${collector.url}/api/metrics')).json();
      for (const { name, config } of metrics) {
        const first = ({ name, domain }) => [name, Array.isArray(domain) ? domain[0] : 0];
        const value = config.domain ? config.domain[0] : config.keys ? {} : config.range ? 1000 : config.attributes ? Object.fromEntries(config.attributes.map(first)) : '/';
        const body = JSON.stringify(new Client(config).randomize(value));
        const answer = await fetch('${collector.url}/api/metrics/' + name + '/reports', { method: 'POST', body });
        if (!answer.ok) throw new Error(name + ': ' + answer.status);
      }`], { cwd: here });
    const runnable = ALL.filter((b) => !b.file && ['js', 'mjs', 'sh'].includes(b.lang));
    assert.ok(runnable.length > 10);
    const failures = [];
    for (const page of PAGES) {
      const pageBlocks = runnable.filter((b) => b.page === page);
      if (pageBlocks.length) failures.push(...runPage(page, pageBlocks, collector.url));
    }
    assert.deepEqual(failures, []);
  } finally {
    await stopCollector(collector);
    rmSync(scratch, { recursive: true, force: true });
  }
});
