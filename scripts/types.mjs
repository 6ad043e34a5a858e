// Makes the generated classes generic in their config, so that TypeScript
// knows which estimate an Aggregator returns and which values a Client
// takes (wasm-bindgen cannot emit generic classes). Fails if the generated
// declarations no longer look as expected.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// The protocol unions come from the library itself (its one list of names),
// read from the Node build that the bindgen step has just written.
const { protocols } = createRequire(import.meta.url)('../dist/node/localdp.js');
const union = (names) => names.map((n) => JSON.stringify(n)).join(' | ');
const families = protocols();

const EDITS = [
  ['= FREQUENCY_PROTOCOLS;', `= ${union(families.frequency)};`],
  ['= NUMERIC_PROTOCOLS;', `= ${union(families.numeric)};`],
  ['| OPEN_DOMAIN_PROTOCOLS;', `| ${union(families.openDomain)};`],
  ['export class Aggregator {', 'export class Aggregator<C extends Config = Config> {'],
  ['merge(other: Aggregator): void;', 'merge(other: Aggregator<C>): void;'],
  ['estimate(options?: EstimateOptions | null): Estimate;', 'estimate(options?: EstimateOptions | null): EstimateFor<C>;'],
  ['export class Client {', 'export class Client<C extends Config = Config> {'],
  ['randomize(value: string | number | number[]): Report;', 'randomize(value: ValueFor<C>): Report;'],
  ['constructor(config: Config, options?: ClientOptions | null);', 'constructor(config: C, options?: ClientOptions | null);'],
  ['constructor(config: Config);', 'constructor(config: C);'],
];

for (const file of process.argv.slice(2)) {
  let text = readFileSync(file, 'utf8');
  for (const [from, to] of EDITS) {
    if (!text.includes(from)) throw new Error(`${file}: expected ${JSON.stringify(from)}`);
    text = text.replace(from, to);
  }
  writeFileSync(file, text);
}
