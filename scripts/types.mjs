// Makes the generated Aggregator generic in its config, so that TypeScript
// knows which estimate it returns (wasm-bindgen cannot emit generic classes;
// the JS Client's types are js/client.d.mts). Fails if the generated
// declarations no longer look as expected.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

// The protocol unions come from the library itself (its one list of names),
// read from the Node build that the bindgen step has just written: the first
// FILE is the full module's Node declarations, beside its bindings.
const { protocols } = createRequire(resolve(process.argv[2]))('./bindings.js');
const union = (names) => names.map((n) => JSON.stringify(n)).join(' | ');
const families = protocols();

const NAMES = [
  ['= FREQUENCY_PROTOCOLS;', `= ${union(families.frequency)};`],
  ['= NUMERIC_PROTOCOLS;', `= ${union(families.numeric)};`],
  ['| OPEN_DOMAIN_PROTOCOLS;', `| ${union(families.openDomain)};`],
  ['= HEAVY_HITTER_PROTOCOLS;', `= ${union(families.heavyHitter)};`],
  ['= DISTRIBUTION_PROTOCOLS;', `= ${union(families.distribution)};`],
  ['= KEY_VALUE_PROTOCOLS;', `= ${union(families.keyValue)};`],
  ['= MARGINALS_PROTOCOLS;', `= ${union(families.marginals)};`],
];
// Only the full module has the Aggregator.
const AGGREGATOR = [
  ['export class Aggregator {', 'export class Aggregator<C extends Config = Config> {'],
  ['merge(other: Aggregator): void;', 'merge(other: Aggregator<C>): void;'],
  ['estimate(options?: EstimateOptions | null): Estimate;', 'estimate(options?: EstimateOptions | null): EstimateFor<C>;'],
  ['constructor(config: Config);', 'constructor(config: C);'],
];
// Only the web bindings have init() (the default export; Node's load the wasm
// synchronously): what it is for, before wasm-bindgen's note on its argument.
const INIT = [
  [
    '/**\n * If `module_or_path` is {RequestInfo} or {URL}',
    '/**\n * Instantiates the wasm module, once: later calls return the first one\'s\n * result. `Client.open` calls it itself; `new Client` (and the full\n * module\'s `new Aggregator` and `protocols()`) need it first: before, they\n * throw an Error that says so.\n *\n * If `module_or_path` is {RequestInfo} or {URL}',
  ],
];

const DISPOSE = '    [Symbol.dispose](): void;\n';

for (const file of process.argv.slice(2)) {
  let text = readFileSync(file, 'utf8');
  const edits = [
    ...NAMES,
    ...(text.includes('export class Aggregator') ? AGGREGATOR : []),
    ...(text.includes('export default function __wbg_init') ? INIT : []),
  ];
  for (const [from, to] of edits) {
    if (!text.includes(from)) throw new Error(`${file}: expected ${JSON.stringify(from)}`);
    text = text.replace(from, to);
  }
  // `[Symbol.dispose]` needs lib esnext (TS2550 on a default target, or in a
  // Node project on es2022): the method stays (`free()` is the same), its
  // declaration goes, so the types compile as projects set them.
  if (!text.includes(DISPOSE)) throw new Error(`${file}: expected ${JSON.stringify(DISPOSE)}`);
  text = text.replaceAll(DISPOSE, '');
  writeFileSync(file, text);
}
