// Node ESM entry of the client module: the CommonJS entry loads the wasm
// synchronously, so the Client is usable right after import.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const { Client, ClientCore, indexedDBStorage, asyncStorage, chromeStorage, fileStorage } = require('./localdp.js');

/**
 * Nothing to wait for here (the wasm is loaded): code written for the web and
 * bundler entries, `await init()`, runs unchanged in Node (tests, server
 * rendering).
 */
export default async function init() {}
