export { Client, Aggregator, protocols } from '../web/localdp.js';
export type * from '../web/localdp.js';
