// The client's no-bundler ES module (`localdp/client/web`), and the
// bundler entry's. `await Client.open(config)` (or `await
// Client.load(config)`, after which `new Client(config)` is synchronous)
// loads the wasm module of the config's family alone (families/FAMILY/, a
// dynamic import() that bundlers split); `await init()`, the default export,
// or `initSync` instantiates the module of every family (bindings.js), after
// which any config is served by it. A context that knows its family and
// cannot import() (an extension's service worker) imports that family's own
// entry, `localdp/client/web/FAMILY` (families/FAMILY/localdp.js).
import init, { ClientCore, initSync } from './bindings.js';
import { bindClient } from './client.mjs';
import { familyOf } from './families.js';
import { withMessage } from './messages.mjs';
import { indexedDBStorage } from './storage.mjs';

export * from './bindings.js';
export * from './storage.mjs';

// Each family's module. The specifiers are literal, so that a bundler emits
// each as a chunk of its own, loaded only when a config of that family is.
const FAMILY_MODULES = {
  grr: () => import('./families/grr/bindings.js'),
  frequency: () => import('./families/frequency/bindings.js'),
  numeric: () => import('./families/numeric/bindings.js'),
  rappor: () => import('./families/rappor/bindings.js'),
  heavy: () => import('./families/heavy/bindings.js'),
  distribution: () => import('./families/distribution/bindings.js'),
  key_value: () => import('./families/key_value/bindings.js'),
  marginals: () => import('./families/marginals/bindings.js'),
};

let everyFamily; // the promise of init(), once asked for
const families = new Map(); // family → the promise of its module's ClientCore, instantiated
const instantiated = new Map(); // family → its ClientCore, once instantiated

/**
 * Instantiates the module of every family (once; later calls return the same
 * promise, but after a failure, which a later call may retry).
 */
export default function initEveryFamily(options) {
  everyFamily ??= init(options).catch((error) => {
    everyFamily = undefined;
    throw error;
  });
  return everyFamily;
}

/** Instantiates the module of every family from its bytes or a compiled `WebAssembly.Module`, synchronously. */
function initEveryFamilySync(options) {
  const exports = initSync(options);
  everyFamily ??= Promise.resolve(exports);
  return exports;
}
export { initEveryFamilySync as initSync };

const modules = {
  core: (config) => instantiated.get(familyOf(config)) ?? ClientCore,
  async load(config) {
    const family = familyOf(config);
    if (instantiated.has(family)) return instantiated.get(family);
    if (everyFamily !== undefined || family === undefined) {
      await initEveryFamily();
      return ClientCore;
    }
    if (!families.has(family)) {
      const loading = FAMILY_MODULES[family]().then(
        async (module) => {
          await module.default();
          instantiated.set(family, module.ClientCore);
          return module.ClientCore;
        },
        async (error) => {
          // A service worker may not import(): the module of every family. Elsewhere the failure is the answer.
          if (!(typeof ServiceWorkerGlobalScope === 'function' && globalThis instanceof ServiceWorkerGlobalScope)) throw error;
          console.warn(`localdp: a service worker cannot import() the ${family} module, so it loads every family's; import localdp/client/web/${family} instead to load only its own`);
          await initEveryFamily();
          return ClientCore;
        },
      );
      // A failed load (a network error) is not kept: the next call tries again.
      families.set(family, loading.catch((error) => {
        families.delete(family);
        throw error;
      }));
    }
    return families.get(family);
  },
  // A family's module reads the byte state only; an earlier release's JSON state is converted by this one.
  async earlier() {
    await initEveryFamily();
    return ClientCore;
  },
};

export const Client = bindClient(modules, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage);
