// A family's own entry, `localdp/client/web/FAMILY` (copied to
// families/FAMILY/localdp.js beside that family's bindings and wasm): for a
// context that knows its family and loads nothing else, such as an
// extension's service worker, which cannot import(). Its module reads the
// byte state only: the JSON state of an earlier release, found once per
// device, is converted by the module of every family (`localdp/client/web`),
// imported then and only then. Where import() is not allowed (a service
// worker), that call rejects with error 312 and nothing is released: open
// the client once from a page or worker, or import `localdp/client/web`
// there, to convert it.
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
  async earlier() {
    const every = await import('../../localdp.js');
    await every.default();
    return every.ClientCore;
  },
};
export const Client = bindClient(modules, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage);
