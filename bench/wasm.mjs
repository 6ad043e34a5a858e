// Throughput of the npm package (wasm in Node), per protocol: client
// randomize() calls per second and aggregator reports per second through
// addMany + estimate. Single-threaded; run after `npm run build`.
//   node bench/wasm.mjs [--n 200000] [--d 1024] [--epsilon 1]
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Client, Aggregator } = require('../dist/node/localdp.js');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const n = arg('n', 200000);
const d = arg('d', 1024);
const epsilon = arg('epsilon', 1);

const wasm = readFileSync(new URL('../dist/node/localdp_bg.wasm', import.meta.url));
console.log(`wasm in Node ${process.version}: d=${d}, n=${n}, ε=${epsilon}, one thread`);
console.log(`localdp.wasm: ${wasm.length} bytes raw, ${gzipSync(wasm, { level: 9 }).length} bytes gzipped`);
console.log(`${'protocol'.padEnd(13)}${'client reports/s'.padStart(14)}${'aggregator reports/s'.padStart(22)}`);

// Zipf-like true values, drawn deterministically (the values are not private here).
const values = Array.from({ length: n }, (_, i) => Math.floor(d * ((i * 0.6180339887) % 1) ** 3));

/** Times randomize() over `inputs` and addMany + estimate over the reports. */
function measure(config, inputs) {
  const client = new Client(config);
  let start = process.hrtime.bigint();
  const reports = inputs.map((v) => client.randomize(v));
  const clientRate = inputs.length / (Number(process.hrtime.bigint() - start) / 1e9);
  const aggregator = new Aggregator(config);
  start = process.hrtime.bigint();
  aggregator.addMany(reports);
  aggregator.estimate();
  const aggregatorRate = inputs.length / (Number(process.hrtime.bigint() - start) / 1e9);
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  console.log(`${config.protocol.padEnd(13)}${fmt(clientRate).padStart(14)}${fmt(aggregatorRate).padStart(22)}`);
  // The JS Client has no free(): its core is freed when it is collected (the bindings' FinalizationRegistry).
  aggregator.free();
}

for (const protocol of ['grr', 'sue', 'oue', 'blh', 'olh', 'hr', 'ss']) measure({ protocol, epsilon, domain: d }, values);
const numbers = values.map((v) => (v * 100) / d);
for (const protocol of ['duchi', 'laplace', 'piecewise', 'hybrid', 'one_bit_mean']) {
  measure({ protocol, epsilon, range: [0, 100] }, numbers);
}
