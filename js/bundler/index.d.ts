export { Client, Aggregator, protocols, plan, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';
export type * from '../web/localdp.js';
