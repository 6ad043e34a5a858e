// Types of client.mjs (and of its CommonJS copy, client.cjs).
import type { ClientCore, ClientOptions, Config, Protocol, Report, ValueFor } from './bindings.js';

/**
 * The client: randomizes values on this device with `crypto.getRandomValues`,
 * memoizing and keeping its privacy ledger as the config asks.
 */
export declare class Client<C extends Config = Config> {
  /**
   * `config` is the CLI's CONFIG.json object; `options.storage` (e.g.
   * `localStorage`) keeps the install's secret, memos and ledger across
   * sessions; `options.now` (ms, default `Date.now`) is the ledger's clock.
   */
  constructor(config: C, options?: ClientOptions | null);
  /** The resolved protocol (what `"auto"` chose). */
  readonly protocol: Protocol;
  /** ε of one report. */
  readonly epsilon: number;
  /** True when the secret, memos and ledger live in a storage. */
  readonly persistent: boolean;
  /** How many times the stored state was found corrupt and started afresh. */
  readonly resets: number;
  /** ε spent in the budget window ending now. */
  readonly spent: number;
  /** Randomizes one value into a report ready to send. */
  randomize(value: ValueFor<C>): Report;
}

/** The `Client` class over a wasm module's `ClientCore` class. */
export declare function bindClient(core: typeof ClientCore): typeof Client;
