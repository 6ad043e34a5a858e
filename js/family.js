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
// by the module of every family, which alone charges it (this family's
// module refuses it, code 313): Client.open and Client.load import that
// module instead of instantiating this one, and once it is loaded it serves
// every config, as in localdp/client/web after init(). Where that import()
// is refused, they reject with error 313 and the import's error as `cause`.
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
  const module = await import('../../localdp.js');
  await module.default();
  return module.ClientCore;
}
let every; // that ClientCore, once a config with "delta" loaded it: it then serves every config
const modules = {
  core: () => every ?? ClientCore,
  async load(config) {
    if (every === undefined && composes(config)) {
      try {
        every = await everyFamily();
      } catch (cause) {
        // This family's module says why it cannot serve the config (313, or what else is wrong with it).
        await init();
        try {
          new ClientCore(config, '0'.repeat(64)).free();
        } catch (error) {
          throw Object.assign(withMessage(error), { cause });
        }
        throw cause;
      }
    }
    if (every !== undefined) return every;
    await init();
    return ClientCore;
  },
  earlier: everyFamily,
};
export const Client = bindClient(modules, () => (globalThis.indexedDB ? indexedDBStorage() : undefined), withMessage);
