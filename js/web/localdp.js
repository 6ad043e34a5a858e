// The no-bundler ES module: `import init, { Client, Aggregator } from
// 'localdp/web'; await init();`. The wasm bindings, with the JS Client over
// their ClientCore; `Client.open` calls init() itself.
import init, { ClientCore } from './bindings.js';
import { bindClient } from './client.mjs';
import { withMessage } from './messages.mjs';
import { indexedDBStorage } from './storage.mjs';

export * from './bindings.js';
export { default } from './bindings.js';
export * from './storage.mjs';
export const Client = bindClient(ClientCore, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage, init);
