// Types of storage.mjs (and of its CommonJS copy, storage.cjs).

/**
 * Where `Client.open` keeps the install's secret, memos and ledger. `update`
 * reads `keys`, calls `fn` synchronously with what it read (absent keys are
 * `undefined`), and stores the entries `fn` returns, as one step that no
 * other context sharing the store can interleave with; it resolves once the
 * writes are stored. `fn` may run more than once (retries); when it throws,
 * nothing of that run is stored and the promise rejects with its error.
 */
export interface SharedStorage {
  /** Reads `keys`, calls `fn` with what it read, and stores what `fn` returns, as one step no other context interleaves with. */
  update(keys: string[], fn: (values: Record<string, string | undefined>) => Record<string, string>): Promise<void>;
}

/** `indexedDBStorage(options)`'s options. */
export interface IndexedDBStorageOptions {
  /** The database's name (default `"localdp"`). */
  name?: string;
  /** The object store's name (default `"state"`). */
  store?: string;
  /** The factory (default `globalThis.indexedDB`). */
  indexedDB?: IndexedDBFactory;
}

/** What `indexedDBStorage` uses of an `IDBFactory` (`globalThis.indexedDB`; typed here so that a project without the DOM's types compiles). */
export interface IndexedDBFactory {
  /** Opens (or creates) the database `name` at `version`: an `IDBOpenDBRequest`. */
  open(name: string, version?: number): unknown;
}

/** IndexedDB, in pages, Web Workers and service workers: each update is one `readwrite` transaction, committed with strict durability. */
export declare function indexedDBStorage(options?: IndexedDBStorageOptions): SharedStorage;

/** An asynchronous key-value store of strings whose reads see every write any context made before (not `localStorage`). */
export interface AsyncStore {
  /** The value stored under `key`, or `undefined`. */
  get(key: string): Promise<string | undefined>;
  /** Stores `value` under `key`. */
  set(key: string, value: string): Promise<void>;
  /** Stores `value` only if `key` still holds `expected` (`undefined`: absent); resolves to whether it did. Needed without Web Locks. */
  compareAndSet?(key: string, expected: string | undefined, value: string): Promise<boolean>;
}

/** `asyncStorage(store, options)`'s options. */
export interface AsyncStorageOptions {
  /** The Web Locks manager (default `navigator.locks`); `null` serializes with the store's `compareAndSet`. */
  locks?: Locks | null;
  /** The lock's name (default `"localdp"`). */
  lockName?: string;
}

/** What `asyncStorage` uses of a `LockManager` (`navigator.locks`; typed here so that a project without the DOM's types compiles). */
export interface Locks {
  /** Runs `callback` holding the exclusive lock `name`; resolves to what it resolves to. */
  request(name: string, callback: () => Promise<unknown>): Promise<unknown>;
}

/**
 * Any async key-value store, serialized with Web Locks where present, else
 * with the store's `compareAndSet` (re-read and retry on a conflict; after
 * 100 conflicts in a row the update rejects with an `Error` named
 * `StorageConflict`). Throws a `TypeError` when it has neither.
 */
export declare function asyncStorage(store: AsyncStore, options?: AsyncStorageOptions): SharedStorage;

/** A `chrome.storage` area (default `chrome.storage.local`), serialized with Web Locks. */
export declare function chromeStorage(area?: ChromeStorageArea): SharedStorage;

/** What `chromeStorage` uses of a `chrome.storage` area. */
export interface ChromeStorageArea {
  /** The items stored under `key` (an object holding it, or not). */
  get(key: string): Promise<Record<string, unknown>>;
  /** Stores `items`. */
  set(items: Record<string, string>): Promise<void>;
}
