// Node ESM entry: the CommonJS entry loads the wasm synchronously, so the
// classes are usable right after import.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const { Client, ClientCore, Aggregator, protocols, plan, indexedDBStorage, asyncStorage, chromeStorage } = require('./localdp.js');
