// The package's Client: a thin class over the wasm ClientCore (randomizing,
// memos and the ledger) whose state lives in memory (`new Client`) or, with
// the install's secret and the reset count, in a storage shared by many
// contexts (`await Client.open`, storage.mjs). One source for every entry
// point: it imports nothing, and the build derives a CommonJS copy
// (client.cjs) for Node's `require`. Its base64 functions are exported for
// the tests; the entries take `bindClient` alone. The core's errors get their message
// here (messages.mjs): the client module's wasm carries none.

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

/** base64's digits (RFC 4648) as character codes, and each code's value (-1: none). */
const DIGITS = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const VALUES = new Int8Array(256).fill(-1);
DIGITS.forEach((code, value) => { VALUES[code] = value; });

/** Bytes as base64 text (padded): the state as every storage can hold it. */
export function base64(bytes) {
  const n = bytes.length;
  const codes = new Uint8Array(Math.ceil(n / 3) * 4).fill(61); // '='
  const digit = (o, word, shift) => {
    codes[o] = DIGITS[word >> shift & 63];
  };
  let i = 0;
  let o = 0;
  for (; i + 2 < n; i += 3, o += 4) {
    const word = bytes[i] << 16 | bytes[i + 1] << 8 | bytes[i + 2];
    digit(o, word, 18);
    digit(o + 1, word, 12);
    digit(o + 2, word, 6);
    digit(o + 3, word, 0);
  }
  if (i < n) {
    const word = bytes[i] << 16 | (i + 1 < n ? bytes[i + 1] << 8 : 0);
    digit(o, word, 18);
    digit(o + 1, word, 12);
    if (i + 1 < n) digit(o + 2, word, 6);
  }
  return new TextDecoder().decode(codes);
}

/**
 * A stored state's bytes, for the core to read or refuse: those of its
 * base64 if it is the one text `base64` writes for them, else its UTF-8
 * (an earlier release's JSON text, or no state at all).
 */
export function stateBytes(text) {
  const codes = new TextEncoder().encode(text);
  const n = codes.length;
  const pad = n % 4 || !n ? 3 : (codes[n - 1] === 61) + (codes[n - 2] === 61);
  if (pad > 2) return codes;
  const bytes = new Uint8Array(n / 4 * 3 - pad);
  // A quad's 24 bits (a digit past `digits` is 0), negative if a digit is not base64's.
  const word = (i, digits) => VALUES[codes[i]] << 18 | VALUES[codes[i + 1]] << 12
    | (digits > 2 ? VALUES[codes[i + 2]] << 6 : 0) | (digits > 3 ? VALUES[codes[i + 3]] : 0);
  let o = 0;
  let bad = 0;
  for (let i = 0; i < n - 4; i += 4, o += 3) {
    const w = word(i, 4);
    bad |= w;
    bytes[o] = w >> 16;
    bytes[o + 1] = w >> 8;
    bytes[o + 2] = w;
  }
  const last = word(n - 4, 4 - pad);
  for (let k = 0; k < 3 - pad; k++) bytes[o + k] = last >> 16 - 8 * k;
  // The bits past the last byte are zero in base64's text; and no byte form starts with `{` (taken for an
  // earlier release's JSON, which a module of one family refuses rather than counting a reset).
  return (bad | last) < 0 || last & (1 << 8 * pad) - 1 || bytes[0] === 123 ? codes : bytes;
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

/** `toJSON` of a pending report: serializing the promise instead of the report is a mistake, said at once. */
function pendingReport() {
  throw new TypeError('this is a promise of a report (Client.open\'s randomize is asynchronous): did you forget `await`?');
}

/**
 * Posts `report` to a collector's reports URL with `fetch` and `keepalive`
 * (sent even when the page is being closed, as a beacon, but with its answer
 * readable); the body is text/plain, a request without a preflight. Resolves
 * to the collector's JSON answer; rejects on a 4xx or 5xx with an `Error`
 * named `CollectorError` whose message is the collector's reason, and on an
 * answer it cannot read (network, CORS) with a `TypeError` that says so.
 * Either error carries `report` (its budget already spent), to post again
 * as it is rather than randomize again.
 */
async function post(url, report) {
  let response;
  try {
    response = await fetch(url, { method: 'POST', body: JSON.stringify(report), keepalive: true });
  } catch (cause) {
    const error = new TypeError(`the collector at ${url} could not be reached, or its answer could not be read (a page on another origin than the collector's needs \`localdp serve --allow-origin <the page's origin>\`)`, { cause });
    error.report = report;
    throw error;
  }
  const answer = await response.json().catch(() => undefined);
  if (response.ok) return answer;
  const error = new Error(typeof answer?.error === 'string' ? answer.error : `the collector answered ${response.status}`);
  error.name = 'CollectorError';
  error.status = response.status;
  error.answer = answer;
  error.report = report;
  throw error;
}

let warnedMemoryOnly = false;

/** Says once (on stderr in Node) that `Client.open` found no storage to keep its state in, and why. */
function warnMemoryOnly(why) {
  if (warnedMemoryOnly) return;
  warnedMemoryOnly = true;
  console.warn(`localdp: Client.open found no storage (${why}), so memos and the privacy ledger last only as long as each client: every restart is a new device that spends its budget afresh. Pass { storage } (fileStorage(path) in Node, asyncStorage(store) elsewhere).`);
}

/**
 * For `Client.open` where there is no storage (no IndexedDB, outside Node):
 * a storage that lasts as long as the client. Its `update` runs
 * synchronously, so it is atomic.
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
 * The `Client` class over the wasm modules' `ClientCore` classes.
 * @param {{ core(config: unknown): typeof import('./bindings.js').ClientCore,
 *   load(config: unknown): Promise<typeof import('./bindings.js').ClientCore>,
 *   earlier?(): Promise<typeof import('./bindings.js').ClientCore> }} modules
 *   the `ClientCore` of the module that serves `config`: `core` gives one
 *   already instantiated (or a module's whose calls say what to call
 *   first), `load` instantiates one first if need be (the web bindings'
 *   init; Node's load synchronously). Where `load` may give a module of one
 *   family, which reads only the byte state, `earlier` instantiates the
 *   module of every family, which converts the JSON state of an earlier
 *   release (once per device).
 * @param {() => import('./storage.mjs').SharedStorage | string | undefined | Promise<import('./storage.mjs').SharedStorage | string>} defaultStorage
 *   the storage of `Client.open` when none is given (IndexedDB in browsers,
 *   a file in Node); where there is none, why not (`undefined`: no
 *   IndexedDB): memory, said once.
 * @param {typeof import('./messages.mjs').withMessage} withMessage gives
 *   the core's errors their message.
 */
export function bindClient(modules, defaultStorage, withMessage) {
  /** `call()` on the core: what it throws, with its message. */
  function coreCall(call) {
    try {
      return call();
    } catch (error) {
      throw withMessage(error);
    }
  }

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
    #seen;
    #config;
    #earlier;

    constructor(core, config, storage, persistent, now) {
      this.#core = core;
      this.#config = config;
      this.#storage = storage;
      this.#persistent = persistent;
      this.#now = now;
      // The state as bytes has a key of its own: the JSON state of the releases before (`localdp:state:`) is
      // read once, migrated, and left as it was, so a page still running one of them (a tab open across a
      // deploy, a rollback) reads its own ledger rather than bytes it would take for corrupt and reset.
      this.#keys = [SECRET_KEY, `localdp:resets:${core.id}`, `localdp:state-bytes:${core.id}`, `localdp:state:${core.id}`];
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
     * How many times a context found the stored secret or state corrupt, or
     * its memos made under a lost secret, or (while open) its secret or
     * state wiped, and started afresh, as of this client's last call (shared
     * by every context). A value reported across `r` resets has cost
     * `(r+1)·ε`.
     */
    get resets() {
      return this.#seen.resets;
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
      const report = this.#run((core, now) => core.randomize(value, now));
      report.toJSON = pendingReport;
      return report;
    }

    /**
     * Randomizes `value` (as `randomize`) and posts the report to `url` (as
     * `Client.send`: a failed post's error carries the report, already
     * charged to the ledger, as `report`).
     */
    async send(url, value) {
      return post(url, await this.randomize(value));
    }

    /** Runs `step(core, now)` on the stored state inside one storage update; resolves to its result. */
    async #run(step) {
      const [secretKey, resetsKey, stateKey, jsonKey] = this.#keys;
      let outcome;
      let seen;
      await this.#storage.update(this.#keys, (values) => {
        const writes = {};
        let secret = values[secretKey];
        const stored = values[stateKey] ?? values[jsonKey];
        const earlier = Number(values[resetsKey]);
        const counted = Number.isSafeInteger(earlier) && earlier > 0 ? earlier : 0;
        const last = this.#seen;
        // The secret or state this client last stored is gone (a wipe, or a lost secret another context
        // replaced), and no context has counted a reset since: its memos are lost.
        let reset = last !== undefined && (secret !== last.secret || stored === undefined) && counted <= last.resets;
        if (!validSecret(secret)) {
          // A lost secret beside a stored state is a reset too: its memos are keyed under the lost secret.
          reset ||= secret !== undefined || stored !== undefined;
          secret = newSecret();
          writes[secretKey] = secret;
        }
        if (secret !== this.#secret || stored !== this.#text) {
          let bytes = stored == null ? undefined : stateBytes(String(stored));
          if (this.#earlier !== undefined && values[stateKey] === undefined && bytes !== undefined) {
            // An earlier release's JSON state, which this module cannot read (it threw code 312): the module
            // of every family reads it, and this one takes it as bytes.
            const earlier = coreCall(() => new this.#earlier(this.#config, secret));
            reset = coreCall(() => earlier.load(secret, bytes)) > 0 || reset;
            bytes = earlier.state;
          }
          try {
            reset = coreCall(() => this.#core.load(secret, bytes)) > 0 || reset;
          } catch (error) {
            if (error.code !== 312 || this.#earlier !== undefined || !modules.earlier) throw error;
            outcome = { earlier: error };
            return {};
          }
          this.#secret = secret;
        }
        // Never below the count this client last saw: a wipe takes the stored count too.
        const resets = Math.max(counted, last?.resets ?? 0) + (reset ? 1 : 0);
        if (resets > 0 && String(resets) !== values[resetsKey]) writes[resetsKey] = String(resets);
        try {
          outcome = { result: coreCall(() => step(this.#core, readClock(this.#now))) };
        } catch (error) {
          outcome = { error };
        }
        this.#text = base64(coreCall(() => this.#core.state));
        if (this.#text !== stored) writes[stateKey] = this.#text;
        seen = { secret, resets };
        return writes;
      });
      if (outcome.earlier) {
        // Where the module of every family cannot be loaded (import() in a service worker), code 312 says why.
        this.#earlier = await modules.earlier().catch((cause) => {
          throw Object.assign(outcome.earlier, { cause });
        });
        return this.#run(step);
      }
      this.#seen = seen; // what the storage now holds (a compare-and-set adapter may have called the function again)
      if ('error' in outcome) throw outcome.error;
      return outcome.result;
    }
  }

  /**
   * The client: randomizes values on this device with
   * `crypto.getRandomValues`, memoizing and keeping its privacy ledger as
   * the config asks, in memory (`new Client`), or in a storage shared by
   * every context of the device (`await Client.open`).
   */
  class Client {
    #core;
    #now;

    /**
     * `new Client(config, { now })`: `config` is the CLI's CONFIG.json
     * object; `now` (ms, default `Date.now`) is the ledger's clock. The
     * secret, memos and ledger live in this object only; a `storage` is a
     * TypeError that points to `Client.open`, since a second context (a
     * tab) reading the same storage would draw its own permanent responses
     * and spend the same budget again.
     */
    constructor(config, options) {
      // The config is checked first, before the options.
      const ClientCore = modules.core(config);
      this.#core = coreCall(() => new ClientCore(config, newSecret()));
      const storage = option(options, 'storage');
      if (storage !== undefined && storage !== null) {
        throw new TypeError('new Client keeps its state in memory only; to keep it in a storage, use await Client.open(config, { storage })');
      }
      const now = option(options, 'now');
      if (now !== undefined && typeof now !== 'function') throw new TypeError('options.now must be a function');
      this.#now = now;
    }

    /**
     * `await Client.open(config, { storage, now })`: a client whose state
     * lives in a storage shared by any number of contexts (tabs, iframes,
     * Web Workers, an extension's service worker and pages), which then
     * behave as one device. `storage` is an adapter from `localdp`'s
     * storage functions (default: `indexedDBStorage()` where IndexedDB
     * exists, a file in Node (`~/.localdp/state.json`, where that folder
     * can be created and written), else memory only, said once with
     * `console.warn` with the reason, and `persistent` is false). The client has
     * the members of `Client`, but `randomize` resolves to the report and
     * `spent` is a promise. It loads and instantiates the wasm module that
     * serves the config first if need be (`Client.load`).
     */
    static async open(config, options) {
      const ClientCore = await modules.load(config);
      const core = coreCall(() => new ClientCore(config, newSecret())); // the config is checked first
      let storage = option(options, 'storage');
      let persistent = true;
      if (storage === undefined || storage === null) {
        storage = await defaultStorage();
        persistent = typeof storage === 'object';
        if (!persistent) {
          warnMemoryOnly(storage ?? 'no IndexedDB here');
          storage = memoryStorage();
        }
      } else if (typeof storage.update !== 'function') {
        throw new TypeError('options.storage of Client.open must be a storage adapter: indexedDBStorage(), asyncStorage(store), chromeStorage(), or fileStorage(path) in Node (Web Storage cannot keep two tabs apart)');
      }
      const now = option(options, 'now');
      if (now !== undefined && typeof now !== 'function') throw new TypeError('options.now must be a function');
      const client = new SharedClient(core, config, storage, persistent, now);
      await client.spent; // reads (or creates) the secret and state, counting resets
      return client;
    }

    /**
     * `await Client.load(config)`: loads and instantiates the wasm module
     * that serves `config` (on the web, `localdp/client/web`: the module of
     * its family alone), after which `new Client(config)` is synchronous.
     * Resolves at once where it is loaded (Node, or after `init()`).
     */
    static async load(config) {
      await modules.load(config);
    }

    /** The resolved protocol (what `"auto"` chose). */
    get protocol() {
      return this.#core.protocol;
    }

    /** ε of one report. */
    get epsilon() {
      return this.#core.epsilon;
    }

    /** False: the secret, memos and ledger last only as long as this object (each new client is a new install). */
    get persistent() {
      return false;
    }

    /** 0: state in memory is never found corrupt. */
    get resets() {
      return 0;
    }

    /** ε spent in the budget window ending now. */
    get spent() {
      return coreCall(() => this.#core.spent(readClock(this.#now)));
    }

    /**
     * Randomizes one value into a report ready to send: a string, or an
     * integer for a sized domain; a number for a numeric metric (clipped to
     * its range), an array of numbers for a record. Only the report leaves
     * the device. Throws `PrivacyBudgetExceeded` (an `Error` of that name)
     * when the budget is spent, releasing nothing.
     */
    randomize(value) {
      return coreCall(() => this.#core.randomize(value, readClock(this.#now)));
    }

    /**
     * Randomizes `value` and posts the report to `url`, a collector's
     * `/api/metrics/{name}/reports`, with `fetch` and `keepalive` (it
     * survives the page being closed). Resolves to the collector's answer
     * (`{ accepted, rejected }`); rejects with an `Error` named
     * `CollectorError` (`status`, `answer`; its message the collector's
     * reason) on a 4xx or 5xx, with a `TypeError` when the answer cannot be
     * read (network, or a page on an origin the collector does not allow),
     * and with what `randomize` throws. Both errors of the post carry the
     * report as `report`: its budget is spent, so post that report again
     * (`JSON.stringify(error.report)`) rather than call `send` again,
     * which would randomize and spend anew.
     */
    async send(url, value) {
      return post(url, this.randomize(value));
    }
  }
  return Client;
}
