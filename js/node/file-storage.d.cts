// Types of file-storage.cjs (Node only).
import type { SharedStorage } from './storage.cjs';

/**
 * A storage in the file `path`, shared by every process of the machine that
 * names it: each update holds a lock file beside it (`path.lock`), and
 * writes atomically (a flushed temporary file renamed over the old one).
 * `Client.open`'s default in Node is `~/.localdp/state.json` (memory, said
 * once, where that folder cannot be created or written). An update that
 * waits 10 s for another live process's lock rejects with an `Error` named
 * `StorageLocked`.
 */
export declare function fileStorage(path: string): SharedStorage;
