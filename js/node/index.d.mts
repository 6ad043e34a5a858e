export * from './localdp.js';
/**
 * Resolves at once: in Node the wasm is loaded on import. Here so that code
 * written for the web and bundler entries, `await init()`, runs unchanged in
 * Node (tests, server rendering); its argument is ignored.
 */
export default function init(options?: unknown): Promise<void>;
