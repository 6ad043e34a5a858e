// The package's Client: a thin class over the wasm ClientCore (randomizing,
// memos and the ledger, in memory) that keeps the install's secret, the
// state and the reset count in a Web-Storage-shaped store (`new Client`), or
// in a storage shared by many contexts (`await Client.open`, storage.mjs).
// One source for every entry point: it imports nothing, and the build
// derives a CommonJS copy (client.cjs) for Node's `require`.

/** The storage key of the per-install secret. */
const SECRET_KEY = 'localdp:secret';

/** A fresh 256-bit secret as 64 hex digits, from the platform's CSPRNG. */
function newSecret() {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(32));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** True for a stored secret the core accepts (a stored non-string is no secret). */
function validSecret(text) {
  return typeof text === 'string' && /^[0-9a-fA-F]{64}$/.test(text);
}

/** `options[key]`, for any `options` (not an object: no options). */
function option(options, key) {
  return options !== null && typeof options === 'object' ? options[key] : undefined;
}

/** The clock's reading in ms: `now()` if given (the core checks its range), else `Date.now()`. */
function readClock(now) {
  if (now === undefined) return Date.now();
  const ms = now.call(null);
  if (typeof ms !== 'number') throw new TypeError('options.now must return a number');
  return ms;
}

/**
 * For `Client.open` where there is no IndexedDB (Node): a storage that lasts
 * as long as the client. Its `update` runs synchronously, so it is atomic.
 */
function memoryStorage() {
  const map = new Map();
  return {
    async update(keys, fn) {
      const values = {};
      for (const key of keys) values[key] = map.get(key);
      for (const [key, value] of Object.entries(fn(values))) map.set(key, value);
    },
  };
}

/**
 * The `Client` class over a wasm module's `ClientCore` class.
 * @param {typeof import('./bindings.js').ClientCore} ClientCore
 * @param {typeof import('./storage.mjs').indexedDBStorage} indexedDBStorage
 *   the default storage of `Client.open` where IndexedDB exists.
 */
export function bindClient(ClientCore, indexedDBStorage) {
  /**
   * A client over a storage shared by several contexts (made by
   * `Client.open`). Each call reads the stored secret, state and reset count
   * inside one `storage.update`, loads them into the core only when the
   * stored text is not the one it last wrote or read, runs, and writes what
   * changed in the same update: no other context can come in between.
   */
  class SharedClient {
    #core;
    #secret;
    #text;
    #storage;
    #persistent;
    #now;
    #keys;
    #resets = 0;

    constructor(core, storage, persistent, now) {
      this.#core = core;
      this.#storage = storage;
      this.#persistent = persistent;
      this.#now = now;
      this.#keys = [SECRET_KEY, `localdp:resets:${core.id}`, `localdp:state:${core.id}`];
    }

    /** The resolved protocol (what `"auto"` chose). */
    get protocol() {
      return this.#core.protocol;
    }

    /** ε of one report. */
    get epsilon() {
      return this.#core.epsilon;
    }

    /** True when the state lives in a storage; false when it lasts only as long as this object. */
    get persistent() {
      return this.#persistent;
    }

    /**
     * How many times a context found the stored secret or state corrupt and
     * started afresh, as of this client's last call (shared by every
     * context). A value reported across `r` resets has cost `(r+1)·ε`.
     */
    get resets() {
      return this.#resets;
    }

    /** A promise of the ε spent in the budget window ending now, across every context. */
    get spent() {
      return this.#run((core, now) => core.spent(now));
    }

    /**
     * Randomizes one value (as `Client.randomize`) and resolves to the
     * report once its memo and ledger entry are stored; rejects with
     * `PrivacyBudgetExceeded`, or whatever the storage throws, releasing
     * nothing.
     */
    randomize(value) {
      return this.#run((core, now) => core.randomize(value, now));
    }

    /** Runs `step(core, now)` on the stored state inside one storage update; resolves to its result. */
    async #run(step) {
      const [secretKey, resetsKey, stateKey] = this.#keys;
      let outcome;
      await this.#storage.update(this.#keys, (values) => {
        const writes = {};
        let secret = values[secretKey];
        const stored = values[stateKey];
        let resets = 0;
        if (!validSecret(secret)) {
          // A lost secret beside a stored state is a reset too: its memos are keyed under the lost secret.
          resets += secret === undefined && stored === undefined ? 0 : 1;
          secret = newSecret();
          writes[secretKey] = secret;
        }
        if (secret !== this.#secret || stored !== this.#text) {
          resets += this.#core.load(secret, stored ?? null);
          this.#secret = secret;
        }
        const earlier = Number(values[resetsKey]);
        this.#resets = (Number.isSafeInteger(earlier) && earlier > 0 ? earlier : 0) + resets;
        if (resets > 0) writes[resetsKey] = String(this.#resets);
        try {
          outcome = { result: step(this.#core, readClock(this.#now)) };
        } catch (error) {
          outcome = { error };
        }
        this.#text = this.#core.state;
        if (this.#text !== stored) writes[stateKey] = this.#text;
        return writes;
      });
      if ('error' in outcome) throw outcome.error;
      return outcome.result;
    }
  }

  /**
   * The client: randomizes values on this device with
   * `crypto.getRandomValues`, memoizing and keeping its privacy ledger as
   * the config asks.
   */
  class Client {
    #core;
    #storage;
    #now;
    #stateKey;
    #resets;

    /**
     * `new Client(config, { storage, now })`: `config` is the CLI's
     * CONFIG.json object; `storage` (e.g. `localStorage`) keeps the
     * install's secret, memos and ledger across sessions; `now` (ms, default
     * `Date.now`) is the ledger's clock.
     */
    constructor(config, options) {
      // The config is checked first, before the options and any storage access.
      const fresh = newSecret();
      const core = new ClientCore(config, fresh);
      let storage = option(options, 'storage');
      if (storage === undefined || storage === null) {
        storage = null;
      } else if (typeof storage.getItem !== 'function' || typeof storage.setItem !== 'function') {
        throw new TypeError('options.storage must have getItem and setItem (like localStorage)');
      }
      const now = option(options, 'now');
      if (now !== undefined && typeof now !== 'function') throw new TypeError('options.now must be a function');
      this.#storage = storage;
      this.#now = now;
      let resets = 0;
      if (storage !== null) {
        const id = core.id;
        this.#stateKey = `localdp:state:${id}`;
        const resetsKey = `localdp:resets:${id}`;
        const stored = storage.getItem(this.#stateKey);
        let secret = storage.getItem(SECRET_KEY);
        if (!validSecret(secret)) {
          // A lost secret beside a stored state is a reset too: its memos are keyed under the lost secret.
          resets += typeof secret === 'string' || typeof stored === 'string' ? 1 : 0;
          secret = fresh;
          storage.setItem(SECRET_KEY, secret);
        }
        if (secret !== fresh || typeof stored === 'string') resets += core.load(secret, typeof stored === 'string' ? stored : null);
        const earlier = Number(storage.getItem(resetsKey));
        const before = Number.isSafeInteger(earlier) && earlier > 0 ? earlier : 0;
        if (resets > 0) {
          storage.setItem(resetsKey, String(before + resets));
          storage.setItem(this.#stateKey, core.state);
        }
        resets += before;
      }
      this.#core = core;
      this.#resets = resets;
    }

    /**
     * `await Client.open(config, { storage, now })`: a client whose state
     * lives in a storage shared by any number of contexts (tabs, iframes,
     * Web Workers, an extension's service worker and pages), which then
     * behave as one device. `storage` is an adapter from `localdp`'s
     * storage functions (default: `indexedDBStorage()` where IndexedDB
     * exists, else memory only, and `persistent` is false). The client has
     * the members of `Client`, but `randomize` resolves to the report and
     * `spent` is a promise.
     */
    static async open(config, options) {
      const core = new ClientCore(config, newSecret()); // the config is checked first
      let storage = option(options, 'storage');
      let persistent = true;
      if (storage === undefined || storage === null) {
        persistent = globalThis.indexedDB !== undefined;
        storage = persistent ? indexedDBStorage() : memoryStorage();
      } else if (typeof storage.update !== 'function') {
        throw new TypeError('options.storage of Client.open must be a storage adapter (indexedDBStorage(), asyncStorage(store), chromeStorage()); Web Storage goes to new Client');
      }
      const now = option(options, 'now');
      if (now !== undefined && typeof now !== 'function') throw new TypeError('options.now must be a function');
      const client = new SharedClient(core, storage, persistent, now);
      await client.spent; // reads (or creates) the secret and state, counting resets
      return client;
    }

    /** The resolved protocol (what `"auto"` chose). */
    get protocol() {
      return this.#core.protocol;
    }

    /** ε of one report. */
    get epsilon() {
      return this.#core.epsilon;
    }

    /**
     * True when the secret, memos and ledger live in a storage; false when
     * they last only as long as this object (each new client is a reset).
     */
    get persistent() {
      return this.#storage !== null;
    }

    /**
     * How many times the stored state was found corrupt and started afresh.
     * Each reset means new permanent responses: a value reported across `r`
     * resets has cost `(r+1)·ε`.
     */
    get resets() {
      return this.#resets;
    }

    /** ε spent in the budget window ending now. */
    get spent() {
      return this.#core.spent(readClock(this.#now));
    }

    /**
     * Randomizes one value into a report ready to send: a string, or an
     * integer for a sized domain; a number for a numeric metric (clipped to
     * its range), an array of numbers for a record. Only the report leaves
     * the device. Throws `PrivacyBudgetExceeded` (an `Error` of that name)
     * when the budget is spent, and whatever the storage throws when the
     * state cannot be kept, releasing nothing.
     */
    randomize(value) {
      const report = this.#core.randomize(value, readClock(this.#now));
      if (this.#storage !== null) this.#storage.setItem(this.#stateKey, this.#core.state);
      return report;
    }
  }
  return Client;
}
