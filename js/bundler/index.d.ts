export { Client, Aggregator } from '../web/localdp.js';
export type * from '../web/localdp.js';
