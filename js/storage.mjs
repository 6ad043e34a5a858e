// Storage adapters for `Client.open`: where a device's secret, memos and
// privacy ledger live when several contexts (tabs, iframes, Web Workers, an
// extension's service worker and pages) share them.
//
// Every adapter has one method, `update(keys, fn)`: read `keys`, call `fn`
// synchronously with what was read, store the entries `fn` returns, as ONE
// step that no other context sharing the store can interleave with. That is
// what makes many contexts one device: two of them can never both draw a
// permanent response for one value, or both spend the same budget. `fn` may
// be called more than once (a compare-and-set adapter retries on a conflict);
// only the call whose writes were stored counts. When `fn` throws, nothing of
// that call is stored and the promise rejects with its error.
//
// This file has no imports: the build ships it as an ES module and as a
// CommonJS copy.

/** How many times a compare-and-set adapter re-reads before giving up. */
const MAX_ATTEMPTS = 100;

/**
 * IndexedDB (pages, Web Workers, service workers): the read, `fn` and the
 * writes run in one `readwrite` transaction, which the browser serializes
 * with every other transaction on the same store of the origin. `fn` runs in
 * the last read's success callback, so the transaction is still active when
 * the writes are queued. The promise resolves when the transaction has
 * committed with `durability: 'strict'` (flushed to disk), so no report is
 * released before its memo and ledger entry are kept.
 *
 * @param {{ name?: string, store?: string, indexedDB?: IDBFactory }} [options]
 *   database name (default `"localdp"`), object store name (default `"state"`),
 *   and the factory (default `globalThis.indexedDB`).
 */
export function indexedDBStorage({ name = 'localdp', store = 'state', indexedDB = globalThis.indexedDB } = {}) {
  if (!indexedDB || typeof indexedDB.open !== 'function') {
    throw new TypeError('indexedDBStorage needs IndexedDB (globalThis.indexedDB or options.indexedDB)');
  }
  let opening;
  const database = () => (opening ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(store);
    request.onsuccess = () => {
      // The browser may close the connection (site data cleared): reopen on the next update.
      request.result.onclose = () => {
        opening = undefined;
      };
      resolve(request.result);
    };
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error(`the IndexedDB database "${name}" is blocked by an older version`));
  }).catch((error) => {
    opening = undefined; // a later call may try again
    throw error;
  }));
  return {
    async update(keys, fn) {
      const db = await database();
      await new Promise((resolve, reject) => {
        const tx = db.transaction(store, 'readwrite', { durability: 'strict' });
        const objects = tx.objectStore(store);
        const values = {};
        let failure;
        tx.oncomplete = () => resolve();
        tx.onabort = () => reject(failure ?? tx.error ?? new Error('the IndexedDB transaction was aborted'));
        let pending = keys.length;
        const write = () => {
          let writes;
          try {
            writes = fn(values);
          } catch (error) {
            failure = error;
            tx.abort();
            return;
          }
          for (const [key, value] of Object.entries(writes)) objects.put(value, key);
        };
        if (pending === 0) return write();
        for (const key of keys) {
          const request = objects.get(key);
          request.onsuccess = () => {
            values[key] = text(request.result);
            if (--pending === 0) write();
          };
        }
      });
    },
  };
}

/**
 * Any asynchronous key-value store of strings: `get(key)` resolves to the
 * value or `undefined`, `set(key, value)` resolves once it is stored.
 * Serialized with the Web Locks API (`navigator.locks`, in pages, workers and
 * extension service workers) when present: every `update` holds the lock
 * `lockName` while it reads, calls `fn` and writes. Without Web Locks the
 * store must offer `compareAndSet(key, expected, value)` (store `value` only
 * if the key still holds `expected`, `undefined` meaning absent; resolve to
 * whether it did): each write is then conditional on what was read, and a
 * conflict re-reads and calls `fn` again (writes stored before the conflict
 * stay; the client lists its writes so that this is harmless: the secret,
 * then the reset count, then the state). With neither, there is no way to
 * keep two contexts apart, so this throws a TypeError. The store's reads
 * must see every write any context made before: IndexedDB and
 * `chrome.storage` do; `localStorage` does not (Chromium updates each
 * renderer process's copy asynchronously), so do not wrap it.
 *
 * @param {{ get(key: string): Promise<string | undefined>, set(key: string, value: string): Promise<void>,
 *   compareAndSet?(key: string, expected: string | undefined, value: string): Promise<boolean> }} store
 * @param {{ locks?: LockManager | null, lockName?: string }} [options]
 *   `locks` (default `navigator.locks`; `null` forces compare-and-set) and the
 *   lock's name (default `"localdp"`).
 */
export function asyncStorage(store, { locks = globalThis.navigator?.locks, lockName = 'localdp' } = {}) {
  if (typeof store?.get !== 'function' || typeof store?.set !== 'function') {
    throw new TypeError('asyncStorage needs a store with get(key) and set(key, value)');
  }
  const read = async (keys) => {
    const values = {};
    for (const key of keys) values[key] = text(await store.get(key));
    return values;
  };
  if (locks) {
    return {
      update: (keys, fn) => locks.request(lockName, async () => {
        const writes = fn(await read(keys));
        for (const [key, value] of Object.entries(writes)) await store.set(key, value);
      }),
    };
  }
  if (typeof store.compareAndSet !== 'function') {
    throw new TypeError('asyncStorage needs the Web Locks API (navigator.locks) or a store with compareAndSet(key, expected, value)');
  }
  return {
    async update(keys, fn) {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const values = await read(keys);
        const writes = Object.entries(fn(values));
        let stored = true;
        for (const [key, value] of writes) {
          if (!(await store.compareAndSet(key, values[key], value))) {
            stored = false;
            break;
          }
        }
        if (stored) return;
      }
      const error = new Error(`the storage changed under ${MAX_ATTEMPTS} attempts in a row`);
      error.name = 'StorageConflict';
      error.reason = 'conflict';
      throw error;
    },
  };
}

/**
 * `chrome.storage.local` (or another `chrome.storage` area) in an extension's
 * service worker and pages, serialized with Web Locks. Content scripts hold
 * the page's locks, not the extension's: do not open clients there.
 *
 * @param {chrome.storage.StorageArea} [area] default `chrome.storage.local`.
 */
export function chromeStorage(area = globalThis.chrome?.storage?.local) {
  if (typeof area?.get !== 'function' || typeof area?.set !== 'function') {
    throw new TypeError('chromeStorage needs a chrome.storage area (chrome.storage.local)');
  }
  return asyncStorage({
    get: async (key) => (await area.get(key))[key],
    set: (key, value) => area.set({ [key]: value }),
  });
}

/** A stored value as text: absent stays `undefined`; anything else that is not a string reads as corrupt text. */
function text(value) {
  return value === undefined || typeof value === 'string' ? value : String(value);
}
