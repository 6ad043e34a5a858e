export { Client, Aggregator, protocols, compose, shuffle, indexedDBStorage, asyncStorage, chromeStorage } from '../web/localdp.js';
export type * from '../web/localdp.js';
