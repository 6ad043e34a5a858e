export * from './bindings.js';
export { Client } from './client.cjs';
export * from './storage.cjs';
