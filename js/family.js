// A family's own entry, `localdp/client/web/FAMILY` (copied to
// families/FAMILY/localdp.js beside that family's bindings and wasm): for a
// context that knows its family and loads nothing else, such as an
// extension's service worker, which cannot import(). Its module reads the
// byte state only: the JSON state of an earlier release, found once per
// device, is converted by the module of every family (`localdp/client/web`),
// imported then and only then. Where import() is not allowed (a service
// worker), that call rejects with error 312 and nothing is released: open
// the client once from a page or worker, or import `localdp/client/web`
// there, to convert it. A config whose budget has "delta" is likewise served
// by the module of every family, which alone charges it (its own module
// refuses it, code 313): Client.open and Client.load import that module
// instead of instantiating this one.
import init, { ClientCore } from './bindings.js';
import { bindClient } from './client.mjs';
import { composes } from '../../families.js';
import { withMessage } from './messages.mjs';
import { indexedDBStorage } from './storage.mjs';

export * from './bindings.js';
export { default } from './bindings.js';
export * from './storage.mjs';
/** The module of every family's ClientCore, instantiated. */
async function everyFamily() {
  const every = await import('../../localdp.js');
  await every.default();
  return every.ClientCore;
}
let composing; // that ClientCore, once a config with "delta" loaded it
const modules = {
  core: (config) => (composing !== undefined && composes(config) ? composing : ClientCore),
  async load(config) {
    if (composes(config)) return (composing = await everyFamily());
    await init();
    return ClientCore;
  },
  earlier: everyFamily,
};
export const Client = bindClient(modules, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage);
