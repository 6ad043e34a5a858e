// Node ESM entry of the client module: the CommonJS entry loads the wasm
// synchronously, so the Client is usable right after import.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const { Client, ClientCore, indexedDBStorage, asyncStorage, chromeStorage } = require('./localdp.js');
