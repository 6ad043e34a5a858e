// The package's Client: a thin class over the wasm ClientCore (randomizing,
// memos and the ledger, in memory) that keeps the install's secret, the
// state and the reset count in a Web-Storage-shaped store. One source for
// every entry point: it imports nothing, and the build derives a CommonJS
// copy (client.cjs) for Node's `require`.

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

/**
 * The `Client` class over a wasm module's `ClientCore` class.
 * @param {typeof import('./bindings.js').ClientCore} ClientCore
 */
export function bindClient(ClientCore) {
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
      let core = new ClientCore(config, fresh, null);
      const get = (key) => (options !== null && typeof options === 'object' ? options[key] : undefined);
      let storage = get('storage');
      if (storage === undefined || storage === null) {
        storage = null;
      } else if (typeof storage.getItem !== 'function' || typeof storage.setItem !== 'function') {
        throw new TypeError('options.storage must have getItem and setItem (like localStorage)');
      }
      const now = get('now');
      if (now !== undefined && typeof now !== 'function') throw new TypeError('options.now must be a function');
      this.#storage = storage;
      this.#now = now;
      let resets = 0;
      if (storage !== null) {
        let secret = storage.getItem(SECRET_KEY);
        if (!validSecret(secret)) {
          resets += typeof secret === 'string' ? 1 : 0;
          secret = fresh;
          storage.setItem(SECRET_KEY, secret);
        }
        const id = core.id;
        this.#stateKey = `localdp:state:${id}`;
        const resetsKey = `localdp:resets:${id}`;
        const stored = storage.getItem(this.#stateKey);
        if (secret !== fresh || typeof stored === 'string') {
          core.free();
          core = new ClientCore(config, secret, typeof stored === 'string' ? stored : null);
        }
        resets += core.resets;
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
      return this.#core.spent(this.#time());
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
      const report = this.#core.randomize(value, this.#time());
      if (this.#storage !== null) this.#storage.setItem(this.#stateKey, this.#core.state);
      return report;
    }

    /** The clock's reading (the core checks its range). */
    #time() {
      if (this.#now === undefined) return Date.now();
      const ms = this.#now.call(null);
      if (typeof ms !== 'number') throw new TypeError('options.now must return a number');
      return ms;
    }
  }
  return Client;
}
