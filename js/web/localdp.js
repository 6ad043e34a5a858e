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
const modules = {
  core: () => ClientCore,
  async load() {
    await init();
    return ClientCore;
  },
};
export const Client = bindClient(modules, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage);
