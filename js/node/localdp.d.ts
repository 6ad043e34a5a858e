export * from './bindings.js';
export { Client } from './client.cjs';
export type { OpenOptions, SharedClient } from './client.cjs';
export * from './storage.cjs';
