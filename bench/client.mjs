// Client throughput (a benchmark, not a test): randomize() calls per second
// per protocol, for the package's client module (`localdp/client` in Node,
// `localdp/client/web` in headless Chromium: the module of every family, and
// each config's family's module alone) beside the same module of an earlier
// build (its dist/client/node and dist/client/web; for a build that had no
// client module, its full module, dist/node and dist/web), measured in one
// run with the same code and inputs, the two builds taking turns in Node. Then `Client.open` on IndexedDB in Chromium (every report
// a committed transaction), and two `Client.open`s of one storage taking
// turns in Node, beside the earlier build. One thread; run after `npm run build`.
//   node bench/client.mjs --dist /tmp/dist-before [--n 100000] [--d 1024] [--epsilon 1] [--repeat 3]
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve, CHROMIUM } from '../tests/js/helpers.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const before = arg('dist');
if (!before) throw new Error('usage: node bench/client.mjs --dist DIR (an earlier build\'s dist/) [--n N] [--d D] [--epsilon E] [--repeat R]');
const n = Number(arg('n', 100000));
const d = Number(arg('d', 1024));
const epsilon = Number(arg('epsilon', 1));
const repeat = Number(arg('repeat', 3));
const openN = Math.min(n, 2000);

const configs = [
  ...['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss'].map((protocol) => ({ protocol, epsilon, domain: d })),
  ...['duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean'].map((protocol) => ({ protocol, epsilon, range: [0, 100] })),
  // A user's map of 3 of 50 keys (minutes in [0, 60]), one report per map.
  ...['pckv_grr', 'pckv_ue'].map((protocol) => ({ protocol, epsilon, keys: 50, range: [0, 60], pad: 4 })),
  // Events of 4 fields (domains 4, 6, 10, 20), every pair's marginal: a build without the family reports "—".
  ...['marginals_oue', 'marginals_olh'].map((protocol) => ({
    protocol, epsilon, attributes: [4, 6, 10, 20].map((domain, i) => ({ name: 'abcd'[i], domain })),
  })),
];
// Zipf-like true values, drawn deterministically (the values are not private here).
const values = Array.from({ length: n }, (_, i) => Math.floor(d * ((i * 0.6180339887) % 1) ** 3));

/**
 * randomize() calls per second for each config, over `values` (scaled into
 * [0, 100] for numeric configs; for key-value configs, a map of three keys
 * made from each; for marginals, an event of each field's value modulo its
 * domain): the best of `repeat` runs, since other work on the machine only
 * ever slows a run down; NaN for a config the build does not know (an
 * earlier build, a newer family). Runs in Node and, as source text, in the
 * page.
 */
function rates(Client, configs, values, repeat) {
  return configs.map((config) => {
    let client;
    try {
      client = new Client(config);
    } catch {
      return NaN;
    }
    const map = (v) => ({ [v % 50]: (v * 60) / 1024, [(v + 17) % 50]: 30, [(v + 33) % 50]: 5 });
    const event = (v) => Object.fromEntries(config.attributes.map(({ name, domain }) => [name, v % domain]));
    const inputs = config.keys ? values.map(map) : config.attributes ? values.map(event) : config.range ? values.map((v) => (v * 100) / 1024) : values;
    let best = 0;
    for (let r = 0; r < repeat; r++) {
      const start = performance.now();
      for (const v of inputs) client.randomize(v);
      best = Math.max(best, inputs.length / ((performance.now() - start) / 1000));
    }
    return best;
  });
}

// Node: the client module through the package's own export, the earlier build through its CommonJS file.
// The earlier build's client module where it has one, else its full module.
const beforeModule = existsSync(resolve(before, 'client/node/localdp.js')) ? 'client/' : '';
const ClientNow = (await import('localdp/client')).Client;
const ClientBefore = createRequire(import.meta.url)(resolve(before, `${beforeModule}node/localdp.js`)).Client;
// Round by round, each build in turn, so that a slow spell of the machine
// falls on both; the best of the rounds.
let nodeClient = configs.map(() => 0);
let nodeBefore = configs.map(() => 0);
const better = (a, b) => a.map((x, i) => Math.max(x, b[i]));
for (let r = 0; r < repeat; r++) {
  nodeClient = better(nodeClient, rates(ClientNow, configs, values, 1));
  nodeBefore = better(nodeBefore, rates(ClientBefore, configs, values, 1));
}

/**
 * Two contexts of one device taking turns over one storage (Node): each
 * report follows the other context's write, so each first loads the stored
 * state. Reports/s over `count` values, awaited one by one.
 */
async function alternating(Client, config, count) {
  // One storage for both: a copy of js/client.mjs's memoryStorage (not
  // exported), shared here by two clients.
  const map = new Map();
  const storage = {
    async update(keys, fn) {
      const values = {};
      for (const key of keys) values[key] = map.get(key);
      for (const [key, value] of Object.entries(fn(values))) map.set(key, value);
    },
  };
  const contexts = [await Client.open(config, { storage }), await Client.open(config, { storage })];
  const domain = config.domain;
  const start = performance.now();
  for (let i = 0; i < count; i++) await contexts[i % 2].randomize(Array.isArray(domain) ? domain[values[i] % domain.length] : values[i] % domain);
  return count / ((performance.now() - start) / 1000);
}
const labels = Array.from({ length: 1000 }, (_, i) => `value ${i}`);
const shared = [{ protocol: 'grr', epsilon, domain: 16, memoize: true }, { protocol: 'oue', epsilon, domain: labels, memoize: true }];
const sharedClient = [];
const sharedBefore = [];
for (const config of shared) {
  sharedClient.push(await alternating(ClientNow, config, openN));
  sharedBefore.push(await alternating(ClientBefore, config, openN));
}

// Chromium: both ES module builds served from one origin.
const pkg = dirname(fileURLToPath(import.meta.resolve('localdp/package.json')));
const clientWeb = `/pkg/${relative(pkg, fileURLToPath(import.meta.resolve('localdp/client/web')))}`;
const server = await serve({ '/pkg/': pkg, '/before/': resolve(before) });
const browser = await chromium.launch(CHROMIUM);
const version = browser.version();
const page = await browser.newPage();
await page.goto(`${server.url}/pkg/package.json`); // any document of the origin, to import the modules from
// With `byFamily`, each config's family module alone (`Client.load`), else
// the module of every family (`init()`). Each in a fresh page: a page that
// has called init() serves every config from the module of every family.
const browserRates = async (url, byFamily) => {
  const page = await browser.newPage();
  await page.goto(`${server.url}/pkg/package.json`);
  const result = await page.evaluate(async ([url, source, configs, values, repeat, byFamily]) => {
    const module = await import(url);
    if (byFamily) for (const config of configs) await module.Client.load(config);
    else await module.default();
    return new Function(`return ${source}`)()(module.Client, configs, values, repeat);
  }, [url, rates.toString(), configs, values, repeat, byFamily]);
  await page.close();
  return result;
};
const webClient = await browserRates(clientWeb, true);
const webEvery = await browserRates(clientWeb, false);
const webBefore = await browserRates(`/before/${beforeModule}web/localdp.js`, false);
const opened = await page.evaluate(async ([url, config, count]) => {
  const module = await import(url);
  const client = await module.Client.open(config);
  const start = performance.now();
  for (let i = 0; i < count; i++) await client.randomize(i % config.domain);
  return count / ((performance.now() - start) / 1000);
}, [clientWeb, configs[0], openN]);
await browser.close();
await server.close();

const fmt = (x) => (Number.isNaN(x) ? '—' : Math.round(x).toLocaleString('en-US'));
console.log(`client reports/s (best of ${repeat}), d=${d}, n=${n}, ε=${epsilon}, one thread; Node ${process.version}, Chromium ${version}`);
console.log(`before: ${resolve(before, beforeModule || '.')} (${beforeModule ? 'its client module: localdp/client, and localdp/client/web after init()' : 'its full module: it has no client module'})`);
console.log('| protocol | Node, before | Node, localdp/client | Chromium, before | Chromium, localdp/client/web, every family (`init()`) | Chromium, localdp/client/web, its family (`Client.load`) |');
console.log('|---|--:|--:|--:|--:|--:|');
configs.forEach((config, i) => {
  console.log(`| ${config.protocol} | ${fmt(nodeBefore[i])} | ${fmt(nodeClient[i])} | ${fmt(webBefore[i])} | ${fmt(webEvery[i])} | ${fmt(webClient[i])} |`);
});
console.log(`| grr, \`Client.open\` (IndexedDB, awaited one by one, n=${openN}) | | | | | ${fmt(opened)} |`);
console.log(`\ntwo contexts of one storage taking turns (each report loads the other's state), Node, n=${openN}, reports/s`);
console.log('| metric | before | localdp/client |');
console.log('|---|--:|--:|');
shared.forEach((config, i) => {
  const what = Array.isArray(config.domain) ? `${config.domain.length} labels` : `domain ${config.domain}`;
  console.log(`| ${config.protocol}, ${what}, memoized | ${fmt(sharedBefore[i])} | ${fmt(sharedClient[i])} |`);
});
