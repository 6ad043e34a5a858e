// The bindings of the GRR client module (wasm/client without wasm-bindgen,
// src/raw.rs), written by hand: copied to
// dist/client/web/families/grr/bindings.js, with the exports of the
// wasm-bindgen bindings of the other modules (`ClientCore`, `initSync`, and
// `init` as the default export). They only move values: the core reads the
// config (flattened here: its `JSON.stringify`, parsed, one tag byte per
// value, as src/json/flat.rs reads it), checks every value and writes every
// report and error; tests/js/families.test.mjs holds them to the module of
// every family on a corpus of configs, valid and invalid.

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
 * `position` held these bytes: a report's names, protocol and fingerprint
 * are the same few texts every time, and decoding them was most of a
 * report's time.
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
 * The report the last call left, as an object (`Report::to_fields`): each
 * field's name, then 0 and a number, 1 and a string, or 2 and numbers.
 */
function report() {
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
      for (let i = 0; i < count; i++, at += 8) list.push(view.getFloat64(at, true));
      object[key] = list;
    }
  }
  return object;
}

/** The error the last call left (src/face.rs, as raw.rs writes it). */
function error() {
  const { class: name, name: ownName, message, props } = JSON.parse(outText());
  const e = new globalThis[name](message);
  if (ownName !== null) e.name = ownName;
  // A number travels as its text (`Infinity` has no JSON).
  for (const [key, value, number] of props) e[key] = number ? Number(value) : value;
  return e;
}

/**
 * A JSON value flattened as src/json/flat.rs reads it: 0 null, 1 false,
 * 2 true, 3 an f64, 4 a string, 5 an array and 6 an object (the byte
 * length of their contents first; an object's keys as strings, untagged).
 */
function flatten(value) {
  let bytes = new Uint8Array(256);
  let at = 0;
  const room = (n) => {
    if (at + n <= bytes.length) return;
    const grown = new Uint8Array(Math.max(bytes.length * 2, at + n));
    grown.set(bytes);
    bytes = grown;
  };
  const u32 = (n, where) => new DataView(bytes.buffer).setUint32(where, n, true);
  const text = (s) => {
    const data = encoder.encode(s);
    room(4 + data.length);
    u32(data.length, at);
    bytes.set(data, at + 4);
    at += 4 + data.length;
  };
  // A loop, not a recursion: a JSON value may nest deeper than the stack.
  // Each open array or object: its items (an object's entries), the next,
  // and where its contents start.
  const open = [];
  let next = value;
  for (;;) {
    room(9);
    if (next === null || next === false || next === true) {
      bytes[at++] = next === null ? 0 : next ? 2 : 1;
    } else if (typeof next === 'number') {
      bytes[at] = 3;
      new DataView(bytes.buffer).setFloat64(at + 1, next, true);
      at += 9;
    } else if (typeof next === 'string') {
      bytes[at++] = 4;
      text(next);
    } else {
      const list = Array.isArray(next);
      bytes[at] = list ? 5 : 6;
      at += 5;
      open.push({ items: list ? next : Object.entries(next), list, index: 0, start: at });
    }
    for (;;) {
      const top = open.at(-1);
      if (top === undefined) return bytes.subarray(0, at);
      if (top.index < top.items.length) {
        const item = top.items[top.index++];
        if (top.list) {
          next = item;
        } else {
          text(item[0]);
          next = item[1];
        }
        break;
      }
      u32(at - top.start, top.start - 4);
      open.pop();
    }
  }
}

/**
 * The plain functions the module imports (core/src/host.rs): the CSPRNG and
 * a number's text. (host.rs declares JSON.parse and parseFloat too, for
 * readers this module does not link.)
 */
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
    if (typeof json !== 'string') throw new TypeError('config must be a JSON object');
    // Every conversion that can throw is done: what is passed in is freed by the module.
    const core = client(...pass(flatten(JSON.parse(json))), ...pass(key));
    if (core === 0) throw error();
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
      return report();
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
