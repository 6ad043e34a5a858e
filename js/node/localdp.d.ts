export * from './bindings.js';
export { Client } from './client.cjs';
export type { CollectorAnswer, CollectorError, OpenOptions, SharedClient } from './client.cjs';
export * from './storage.cjs';
export { fileStorage } from './file-storage.cjs';
