// Types of client.mjs (and of its CommonJS copy, client.cjs).
import type { SharedStorage } from './storage.mjs';
import type { ClientCore, ClientOptions, Config, ProtocolFor, Report, ValueFor } from './bindings.js';

/**
 * The client: randomizes values on this device with `crypto.getRandomValues`,
 * memoizing and keeping its privacy ledger as the config asks, in memory
 * (`new Client`) or in a storage shared by every context (`Client.open`).
 */
export declare class Client<C extends Config = Config> {
  /**
   * `config` is the CLI's CONFIG.json object; `options.now` (ms, default
   * `Date.now`) is the ledger's clock. The secret, memos and ledger live in
   * this object only (a `storage` option throws a TypeError: use `Client.open`).
   */
  constructor(config: C, options?: ClientOptions | null);
  /** The resolved protocol (what `"auto"` chose). */
  readonly protocol: ProtocolFor<C>;
  /** ε of one report. */
  readonly epsilon: number;
  /** False: the state lasts as long as this object. */
  readonly persistent: boolean;
  /** 0: state in memory is never found corrupt. */
  readonly resets: number;
  /** ε spent in the budget window ending now. */
  readonly spent: number;
  /** Randomizes one value into a report ready to send. */
  randomize(value: ValueFor<C>): Report;
  /**
   * Randomizes `value` and posts the report to `url` (a collector's
   * `/api/metrics/{name}/reports`) with `fetch` and `keepalive`. Resolves to
   * the collector's answer; rejects with a {@link CollectorError} on a 4xx
   * or 5xx, and with a `TypeError` when the answer cannot be read (network,
   * or a page on an origin the collector does not allow). Both carry the
   * report as `report`: its budget is spent, so post it again rather than
   * call `send` again, which would randomize and spend anew.
   */
  send(url: string | URL, value: ValueFor<C>): Promise<CollectorAnswer>;
  /**
   * A client whose secret, memos and ledger live in a storage shared by any
   * number of contexts (tabs, iframes, Web Workers, an extension's service
   * worker and pages), which then behave as one device. `storage` defaults
   * to `indexedDBStorage()` where IndexedDB exists, a file in Node
   * (`~/.localdp/state.json`, where that folder can be created and written),
   * else memory (said once on the console, with the reason). It loads and
   * instantiates the wasm module that serves the config first if need be
   * ({@link Client.load}).
   */
  static open<C extends Config>(config: C, options?: OpenOptions | null): Promise<SharedClient<C>>;
  /**
   * Loads and instantiates the wasm module that serves `config` (from
   * `localdp/client/web` and `localdp/client` in a bundler: the module of
   * the config's family alone, or of every family for a budget with
   * `delta`), after which `new Client(config)` is
   * synchronous. Resolves at once where it is loaded (Node, or after the
   * entry's `init()`, which loads every family).
   */
  static load(config: Config): Promise<void>;
}

/** `Client.open(config, options)`'s options. */
export interface OpenOptions {
  /** Where the state lives: `indexedDBStorage()`, `asyncStorage(store)`, `chromeStorage()`, `fileStorage(path)` (Node). */
  storage?: SharedStorage | null;
  /** The ledger's clock in ms since 1970 (default `Date.now`). */
  now?: () => number;
}

/** What `Client.open` resolves to: `Client`'s members, with `randomize` and `spent` asynchronous. */
export interface SharedClient<C extends Config = Config> {
  /** The resolved protocol (what `"auto"` chose). */
  readonly protocol: ProtocolFor<C>;
  /** ε of one report. */
  readonly epsilon: number;
  /** False only without a storage, where there is no IndexedDB or (Node) no writable `~/.localdp` (memory). */
  readonly persistent: boolean;
  /** Resets counted by any context (corrupt or wiped state, memos under a lost secret), as of this client's last call. */
  readonly resets: number;
  /** ε spent in the budget window ending now, across every context. */
  readonly spent: Promise<number>;
  /** Resolves to the report once its memo and ledger entry are stored. */
  randomize(value: ValueFor<C>): Promise<Report>;
  /** Randomizes `value` and posts the report to `url`, as `Client.send` (a failed post's error carries the report). */
  send(url: string | URL, value: ValueFor<C>): Promise<CollectorAnswer>;
}

/** The collector's answer to a report post. */
export interface CollectorAnswer {
  /** Reports counted. */
  accepted: number;
  /** Reports refused, by reason. */
  rejected: Record<string, number>;
}

/** How `send` rejects on a 4xx or 5xx: `message` is the collector's reason (its JSON `error`). */
export interface CollectorError extends Error {
  /** Always `"CollectorError"`. */
  name: 'CollectorError';
  /** The HTTP status. */
  status: number;
  /** The collector's JSON answer, when it was JSON. */
  answer: unknown;
  /** The report that was posted (its budget spent): post it again rather than randomize again. */
  report: Report;
}

/**
 * The `Client` class over the wasm modules' `ClientCore` classes: `core`
 * gives the one that serves a config, instantiated (or whose calls say what
 * to call first), and `load` instantiates it first if need be;
 * `defaultStorage` is `Client.open`'s default; `withMessage` gives the
 * core's errors their message.
 */
export declare function bindClient(
  modules: { core(config: unknown): typeof ClientCore; load(config: unknown): Promise<typeof ClientCore> },
  defaultStorage: () => SharedStorage | string | undefined | Promise<SharedStorage | string>,
  withMessage: typeof import('./messages.mjs').withMessage,
): typeof Client;
