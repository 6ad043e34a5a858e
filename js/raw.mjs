// The bindings of the GRR client module (wasm/client without wasm-bindgen,
// src/raw.rs), written by hand: copied to
// dist/client/web/families/grr/bindings.js, with the exports of the
// wasm-bindgen bindings of the other modules (`ClientCore`, `initSync`, and
// `init` as the default export). They read the config's shape (which keys,
// which types: `shape` below, with the core's error codes and texts) and
// pass its values as typed arguments; the core checks every value and
// writes every report and error. tests/js/families.test.mjs holds them to
// the module of every family on a corpus of configs, valid and invalid.

const MESSAGE = 'localdp is not initialized: call `await init()` (the default export) first, or create the client with `await Client.open(config)`';
/** The wasm's exports until init: each member throws, saying what to call. */
const UNINITIALIZED = new Proxy({}, { get() { throw new Error(MESSAGE); } });
let wasm = UNINITIALIZED;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

const memory = () => new Uint8Array(wasm.memory.buffer);

/** `bytes` copied into the module's memory (`alloc`, which the module frees): [address, length]. */
function pass(bytes) {
  const at = wasm.alloc(bytes.length) >>> 0;
  memory().set(bytes, at);
  return [at, bytes.length];
}

/** What the last call left: bytes, or its text. */
function out() {
  const ptr = wasm.out_ptr() >>> 0;
  const len = wasm.out_len() >>> 0;
  return memory().slice(ptr, ptr + len);
}
const outText = () => decoder.decode(out());

/**
 * The text of `bytes`, the same string as the last time the field at
 * `position` held these bytes (a report's or an error's, `fields`): a
 * report's names, protocol and fingerprint are the same few texts every
 * time, and decoding them was most of a report's time.
 */
const texts = [];
function text(bytes, from, to, position) {
  const last = texts[position];
  if (last !== undefined && last[0].length === to - from) {
    let same = true;
    for (let i = from; same && i < to; i++) same = bytes[i] === last[0][i - from];
    if (same) return last[1];
  }
  const decoded = decoder.decode(bytes.subarray(from, to));
  texts[position] = [bytes.slice(from, to), decoded];
  return decoded;
}

/**
 * What the last call left as an object (core/src/host.rs `Fields`: a
 * report's fields, an error's): each field's name, then 0 and a number, 1
 * and a string, 2 and numbers, or 3 and strings.
 */
function fields() {
  const ptr = wasm.out_ptr() >>> 0;
  const len = wasm.out_len() >>> 0;
  const bytes = new Uint8Array(wasm.memory.buffer, ptr, len);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const object = {};
  for (let at = 0, field = 0; at < bytes.length; field += 2) {
    const key = text(bytes, at + 1, at + 1 + bytes[at], field);
    at += 1 + bytes[at];
    const tag = bytes[at];
    if (tag === 0) {
      object[key] = view.getFloat64(at + 1, true);
      at += 9;
    } else if (tag === 1) {
      const len = view.getUint32(at + 1, true);
      object[key] = text(bytes, at + 5, at + 5 + len, field + 1);
      at += 5 + len;
    } else {
      const count = view.getUint32(at + 1, true);
      at += 5;
      const list = [];
      for (let i = 0; i < count; i++) {
        if (tag === 2) {
          list.push(view.getFloat64(at, true));
          at += 8;
        } else {
          const len = view.getUint32(at, true);
          list.push(decoder.decode(bytes.subarray(at + 4, at + 4 + len)));
          at += 4 + len;
        }
      }
      object[key] = list;
    }
  }
  return object;
}

/** The error the last call left (src/face.rs, as raw.rs writes it). */
function error() {
  const { class: kind, name, message, ...props } = fields();
  const e = new [TypeError, RangeError, Error][kind](message);
  if (name !== undefined) e.name = name;
  return Object.assign(e, props);
}

/** The keys of a GRR config, as the core lists them (`FrequencyConfig::read`, `CLIENT_KEYS`). */
const KEYS = ['protocol', 'epsilon', 'domain', 'd', 'instantaneous_epsilon', 'memoize', 'budget'];
const DOMAIN_SHAPE = 'domain is missing, or is neither a size (a whole number) nor a list of strings';

/** The core's error of a malformed config (code 100), as src/face.rs describes it. */
const malformed = (key, detail) => Object.assign(new TypeError(''), { key, code: 100, params: [detail] });
/** A string as the core receives it: lone surrogates replaced, as its UTF-8 decoding does. */
const wellFormed = (s) => decoder.decode(encoder.encode(s));
/**
 * The field `key` of a parsed config (undefined: absent), a number JSON has
 * no form for (which `JSON.rawJSON` may write) as null, as the core reads it.
 */
function get(object, key) {
  const value = Object.hasOwn(object, key) ? object[key] : undefined;
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}
/** `x` if it is a whole number ≥ 0 that JS holds exactly (`localdp_core::json::whole`: not -0). */
const whole = (x) => (Number.isSafeInteger(x) && x >= 0 && !Object.is(x, -0) ? x : undefined);
const isObject = (x) => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A string quoted as the core's messages quote it (`json::quoted`). */
function quoted(s) {
  let out = '"';
  for (const c of wellFormed(s)) {
    const n = c.codePointAt(0);
    const escaped = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '\\0' }[c];
    out += escaped ?? (n < 0x20 || (n >= 0x7f && n < 0xa0) ? `\\u{${n.toString(16)}}` : c);
  }
  return `${out}"`;
}

/** A number's text in the core's messages (`number_text`, the module's). */
function numberText(x) {
  wasm.number(x);
  return outText();
}

/** What a u64 field's message says of a value that is not one, in serde's words (`Field::invalid_integer`). */
function notU64(x) {
  if (Number.isSafeInteger(x)) return `invalid value: integer \`${x}\`, expected u64`;
  let found;
  if (typeof x === 'boolean') found = `boolean \`${x}\``;
  else if (typeof x === 'number') found = `floating point \`${numberText(x)}\``;
  else if (typeof x === 'string') found = `string ${quoted(x)}`;
  else found = Array.isArray(x) ? 'sequence' : 'map';
  return `invalid type: ${found}, expected u64`;
}

/** The optimal string alignment distance of two byte strings, ASCII letter case aside (`config::edits`). */
function edits(a, b) {
  const lower = (c) => (c >= 65 && c <= 90 ? c + 32 : c);
  let before = [];
  let last = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array(b.length + 1).fill(i);
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(last[j] + 1, row[j - 1] + 1, last[j - 1] + (lower(a[i - 1]) === lower(b[j - 1]) ? 0 : 1));
      if (i > 1 && j > 1 && lower(a[i - 1]) === lower(b[j - 2]) && lower(a[i - 2]) === lower(b[j - 1])) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    [before, last] = [last, row];
  }
  return last[b.length];
}

/** The unknown key's error, naming the key it is a typo of, if one is close (`ConfigObject::only`). */
function unknown(key) {
  let best;
  for (const k of KEYS) {
    const n = edits(encoder.encode(key), encoder.encode(k));
    if (n <= 2 && 3 * n < k.length && (best === undefined || n < best[0])) best = [n, k];
  }
  const detail = `unknown field \`${key}\`, expected one of ${KEYS.map((k) => `\`${k}\``).join(', ')}`;
  return malformed(key, best ? `${detail}; did you mean \`${best[1]}\`?` : detail);
}

/**
 * The config's shape, read as the core reads a config object
 * (`ClientKeys::read`, `Metric::from_config`, `FrequencyConfig::read`), in
 * its order: the client-only keys (whose error is thrown here), then the
 * metric's (whose error the core's checks of the client-only values come
 * before: `error`). What the core's `client` takes, NaN for an absent key.
 */
function shape(config) {
  const memoize = get(config, 'memoize');
  if (memoize !== undefined && typeof memoize !== 'boolean') throw malformed('memoize', '"memoize" must be true or false');
  const read = { memoize: memoize ?? false, budget: NaN, window: '', delta: NaN, granularity: NaN, epsilon: NaN, size: NaN, labels: [], d: NaN, instantaneous: NaN };
  const budget = get(config, 'budget');
  if (budget !== undefined) {
    if (!isObject(budget)) throw malformed('budget', '"budget" must be an object');
    read.budget = get(budget, 'epsilon');
    if (typeof read.budget !== 'number') throw malformed('budget', '"budget" needs "epsilon" (a number) and "window" (e.g. "1d")');
    read.window = get(budget, 'window');
    if (typeof read.window !== 'string') throw malformed('budget', '"budget" needs "window", e.g. "1d", "12h", "30m"');
    if (Object.keys(budget).some((k) => !['epsilon', 'window', 'delta'].includes(k))) {
      throw malformed('budget', '"budget" takes only "epsilon", "window" and "delta"');
    }
    const delta = get(budget, 'delta');
    if (delta !== undefined && typeof delta !== 'number') throw malformed('budget.delta', '"budget.delta" must be a number in (1e-200, 1)');
    read.delta = delta ?? NaN;
  }
  const granularity = get(config, 'granularity');
  if (granularity !== undefined) read.granularity = whole(granularity) ?? -1;
  try {
    const protocol = get(config, 'protocol');
    if (protocol !== undefined && typeof protocol !== 'string') throw malformed('protocol', '"protocol" must be a string');
    if (protocol !== 'grr') {
      throw malformed('protocol', protocol === undefined ? 'missing "protocol" (one of grr)' : '"protocol" of a frequency ("domain") metric must be one of grr');
    }
    const epsilon = get(config, 'epsilon');
    if (epsilon !== undefined && typeof epsilon !== 'number') throw malformed('epsilon', '"epsilon" must be a number');
    const instantaneous = get(config, 'instantaneous_epsilon');
    if (instantaneous !== undefined && typeof instantaneous !== 'number') {
      throw malformed('instantaneous_epsilon', '"instantaneous_epsilon" must be a number');
    }
    const stranger = Object.keys(config).find((k) => !KEYS.includes(k) && k !== 'granularity');
    if (stranger !== undefined) throw unknown(wellFormed(stranger));
    if (epsilon === undefined) throw malformed('epsilon', 'missing field `epsilon`');
    const domain = get(config, 'domain');
    if (whole(domain) !== undefined) read.size = domain;
    else if (Array.isArray(domain) && domain.every((label) => typeof label === 'string')) read.labels = domain;
    else throw malformed('domain', DOMAIN_SHAPE);
    const d = get(config, 'd') ?? NaN;
    if (!Number.isNaN(d) && whole(d) === undefined) throw malformed('d', notU64(d));
    Object.assign(read, { epsilon, d, instantaneous: instantaneous ?? NaN });
  } catch (e) {
    read.error = e;
  }
  return read;
}

/**
 * Labels as the core's `client` takes them: each its UTF-8's length (4
 * bytes, little endian), then its UTF-8, written into one buffer (a typed
 * array a label would make the collector's work, for a million labels,
 * most of a client's construction).
 */
function labelBytes(labels) {
  let bytes = new Uint8Array(256);
  let at = 0;
  for (const label of labels) {
    const room = at + 4 + 3 * label.length;
    if (room > bytes.length) {
      const grown = new Uint8Array(Math.max(2 * bytes.length, room));
      grown.set(bytes.subarray(0, at));
      bytes = grown;
    }
    const { written } = encoder.encodeInto(label, bytes.subarray(at + 4));
    for (let i = 0; i < 4; i++) bytes[at + i] = written >>> (8 * i);
    at += 4 + written;
  }
  return bytes.subarray(0, at);
}

/** The plain functions the module imports (core/src/host.rs): the CSPRNG and a number's text. */
function imports() {
  return {
    l: {
      r(at, len) {
        try {
          globalThis.crypto.getRandomValues(new Uint8Array(wasm.memory.buffer, at >>> 0, len >>> 0));
          return 0;
        } catch {
          return 1;
        }
      },
      d(x, at) {
        const digits = encoder.encode(String(x));
        memory().set(digits, at >>> 0);
        return digits.length;
      },
    },
  };
}

const registry = typeof FinalizationRegistry === 'undefined'
  ? { register() {}, unregister() {} }
  : new FinalizationRegistry((core) => wasm.free(core));

/** A secret's UTF-8, or a TypeError: a string, as wasm-bindgen's bindings take it. */
function secretBytes(secret) {
  if (typeof secret !== 'string' && !(secret instanceof String)) throw new TypeError('the secret must be a string');
  return encoder.encode(secret);
}

/** A client's core: the same class as the other modules' `ClientCore` (wasm/client/src/lib.rs). */
export class ClientCore {
  #core = 0;

  constructor(config, secret) {
    const { client } = wasm; // before init, says what to call
    const key = secretBytes(secret);
    if (typeof config !== 'object' || config === null) throw new TypeError('config must be an object');
    // JSON has no NaN or Infinity: caught before JSON.stringify turns them into null.
    const epsilon = Reflect.get(config, 'epsilon');
    if (typeof epsilon === 'number' && !Number.isFinite(epsilon)) {
      throw Object.assign(new RangeError('invalid configuration: epsilon must be a finite number > 0'), { parameter: 'epsilon' });
    }
    let json;
    try {
      json = JSON.stringify(config);
    } catch {
      json = undefined;
    }
    // What the core reads: the config as JSON reads it.
    const parsed = typeof json === 'string' ? JSON.parse(json) : undefined;
    if (!isObject(parsed)) throw new TypeError('config must be a JSON object');
    const read = shape(parsed);
    // Every conversion that can throw is done: what is passed in is freed by the module.
    const core = client(
      read.memoize ? 1 : 0, read.budget, ...pass(encoder.encode(read.window)), read.delta, read.granularity, read.error ? 0 : 1,
      read.epsilon, read.size, ...pass(labelBytes(read.labels)), read.d, read.instantaneous, ...pass(key),
    );
    if (core === 0) throw wasm.out_len() === 0 ? read.error : error();
    this.#core = core;
    registry.register(this, core, this);
  }

  /** Whether a call of this core is running (a page's `crypto.getRandomValues` may call back). */
  #busy = false;

  /**
   * `call(core)`, once every conversion of the caller's values is done (they
   * may run the caller's code, which may free this core): the error of a
   * freed core, or of a call while one is running, as wasm-bindgen's.
   */
  #use(call) {
    if (this.#core === 0) throw new Error('null pointer passed to rust');
    if (this.#busy) throw new Error('recursive use of an object detected which would lead to unsafe aliasing in rust');
    this.#busy = true;
    try {
      return call(this.#core);
    } finally {
      this.#busy = false;
    }
  }

  /** Takes the install's secret and a stored state (or none); the resets found. */
  load(secret, state) {
    const key = secretBytes(secret);
    const none = state === undefined || state === null;
    // A copy first: reading a caller's array-like may throw.
    const bytes = new Uint8Array(none ? 0 : state.length);
    if (!none) bytes.set(state);
    return this.#use((core) => {
      if (wasm.load(core, ...pass(key), ...pass(bytes), none ? 0 : 1)) throw error();
      return out()[0];
    });
  }

  /** The resolved protocol. */
  get protocol() {
    return this.#use((core) => {
      wasm.protocol(core);
      return outText();
    });
  }

  /** ε of one report. */
  get epsilon() {
    return this.#use((core) => wasm.epsilon(core));
  }

  /** The metric's id. */
  get id() {
    return this.#use((core) => {
      wasm.id(core);
      return outText();
    });
  }

  /** The state's bytes. */
  get state() {
    return this.#use((core) => {
      wasm.state(core);
      return out();
    });
  }

  /** ε spent in the window ending at `now`. */
  spent(now) {
    const clock = +now;
    return this.#use((core) => {
      const spent = wasm.spent(core, clock);
      // A sum of charges, each finite and ≥ 0, is never NaN: NaN says an error.
      if (Number.isNaN(spent)) throw error();
      return spent;
    });
  }

  /** Randomizes one value into a report, at `now`. */
  randomize(value, now) {
    const clock = +now;
    const kind = typeof value === 'string' ? 0 : typeof value === 'number' ? 1 : 2;
    return this.#use((core) => {
      let len = 0;
      if (kind === 0) {
        // Its UTF-8 written straight into the module (at most 3 bytes a
        // UTF-16 unit): ASCII by a loop, the rest by the encoder.
        const room = value.length * 3;
        const at = wasm.input(room) >>> 0; // may grow the memory: its buffer after
        const into = new Uint8Array(wasm.memory.buffer, at, room);
        for (let c; len < value.length && (c = value.charCodeAt(len)) < 0x80; len++) into[len] = c;
        if (len < value.length) len += encoder.encodeInto(value.slice(len), into.subarray(len)).written;
      }
      if (wasm.randomize(core, kind, len, kind === 1 ? value : 0, clock)) throw error();
      return fields();
    });
  }

  /** Frees the core (else the garbage collector does). */
  free() {
    this.#use((core) => {
      this.#core = 0;
      registry.unregister(this);
      wasm.free(core);
    });
  }
}
if (Symbol.dispose) ClientCore.prototype[Symbol.dispose] = ClientCore.prototype.free;

/** The instance's exports, unless another instance came first (an initSync during an init). */
function finish(instance) {
  if (wasm === UNINITIALIZED) wasm = instance.exports;
  return wasm;
}

/** Instantiates the module at once, from `{ module }`: its bytes or a `WebAssembly.Module`. */
export function initSync(options) {
  if (wasm !== UNINITIALIZED) return wasm;
  let module = options;
  if (options !== undefined && Object.getPrototypeOf(options) === Object.prototype) ({ module } = options);
  const compiled = module instanceof WebAssembly.Module ? module : new WebAssembly.Module(module);
  return finish(new WebAssembly.Instance(compiled, imports()));
}

/** The module's instance, from `{ module_or_path }` (a URL, a Response, bytes or a Module; by default the wasm beside this file). */
async function instantiate(options) {
  let source = options;
  if (options !== undefined && Object.getPrototypeOf(options) === Object.prototype) ({ module_or_path: source } = options);
  if (source === undefined) source = new URL('localdp_client_bg.wasm', import.meta.url);
  if (typeof source === 'string' || (typeof Request === 'function' && source instanceof Request) || source instanceof URL) source = fetch(source);
  source = await source;
  if (typeof Response === 'function' && source instanceof Response) {
    if (!source.ok) throw new Error(`failed to fetch Wasm: ${source.status} ${source.statusText} fetching '${source.url}'`);
    if (typeof WebAssembly.instantiateStreaming === 'function') {
      try {
        return (await WebAssembly.instantiateStreaming(source.clone(), imports())).instance;
      } catch (e) {
        // A server that does not serve application/wasm: the slower way.
        if (source.headers.get('Content-Type') === 'application/wasm') throw e;
      }
    }
    source = await source.arrayBuffer();
  }
  const result = await WebAssembly.instantiate(source, imports());
  return result.instance ?? result;
}

let pending;
/** Fetches and instantiates the module once, however often it is called. */
export default function init(options) {
  if (wasm !== UNINITIALIZED) return Promise.resolve(wasm);
  pending ??= instantiate(options).then(finish, (e) => {
    pending = undefined;
    throw e;
  });
  return pending;
}
