export * from './bindings.js';
export { default } from './bindings.js';
export { Client } from './client.mjs';
export type { CollectorAnswer, CollectorError, OpenOptions, SharedClient } from './client.mjs';
export * from './storage.mjs';
