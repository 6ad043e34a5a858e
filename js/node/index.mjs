// Node ESM entry: the CommonJS bindings load the wasm synchronously, so the
// classes are usable right after import.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const bindings = require('./localdp.js');

export const { Client, Aggregator, protocols } = bindings;
