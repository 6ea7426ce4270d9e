// SPDX-License-Identifier: LGPL-2.1-or-later
//
// TypeScript declarations of kratelimit (index.js; Documentation/node.md).

/** A limiter's configuration (struct rl_config); numbers are integers. */
export interface Config {
  rate: number;
  periodNs: number;
  burst: number;
  flags: number;
  catchup: number;
  concurrency: number;
  backlog: number;
  fairness: number;
  /**
   * With flags & CONFIG_KEYED (keyed: true on input): the most keys kept
   * with state at once; 0 on input picks the kernel's default (65536).
   */
  keys: number;
}

/** What config() returns: the configuration, keyed and fairPerUser read from flags. */
export interface ConfigOutput extends Config {
  /** A token bucket of these limits per key (acquireKey()). */
  keyed: boolean;
  /** Fair shares per user, not per fd (CONFIG_FAIR_PER_USER). */
  fairPerUser: boolean;
}

/**
 * What a configuration may be given as: a rate string ("100/s:10",
 * rl_parse_rate(3)), or fields, whose rate may be a rate string that the
 * other fields then amend (e.g. { rate: "200/s", concurrency: 4 }).
 */
export type ConfigInput =
  | string
  | (Partial<Omit<Config, 'rate'>> & {
      rate?: number | string;
      periodMs?: number;
      /** Sets or clears CONFIG_KEYED in flags: a bucket per key; fixed at creation. */
      keyed?: boolean;
      /** Sets or clears CONFIG_FAIR_PER_USER in flags: fair shares per user, not per fd. */
      fairPerUser?: boolean;
    });

/** The limiter's counters (struct rl_stats). */
export interface Stats {
  granted: number;
  requests: number;
  immediate: number;
  waited: number;
  waitNsTotal: number;
  waitNsMax: number;
  timeouts: number;
  interrupted: number;
  rejected: number;
  waiters: number;
  available: number;
  held: number;
  clients: number;
  backlog: number;
  refunded: number;
}

export type Priority = 'low' | 'mid' | 'high' | 'user' | 0 | 1 | 2 | 3 | 4;

export interface AttachOptions {
  /** Create the limiter when the name does not exist. */
  create?: boolean;
  /** With create: fail with EEXIST when it exists. */
  exclusive?: boolean;
  /** A created limiter outlives its last client. */
  persist?: boolean;
  /** Limits of a limiter this call creates (paused without). */
  config?: ConfigInput;
  /** Permission bits of a limiter this call creates; 0o644 by default. */
  mode?: number;
}

export interface AcquireOptions {
  /** Reject with ETIMEDOUT after this many ms; nothing is consumed then. */
  timeoutMs?: number;
  /** 'low' .. 'user' or 1..4; the fd's own priority by default. */
  priority?: Priority;
  /** Rejects with signal.reason, giving back whatever was granted. */
  signal?: AbortSignal;
}

/** A key of a keyed limiter: a string (UTF-8) or bytes, 1 to KEY_MAX bytes. */
export type Key = string | Uint8Array;

export interface AcquireKeyOptions {
  /**
   * Reject with ETIMEDOUT after this many ms; nothing is taken then (the
   * error has readyNs, retryAfterMs and retryAfter).
   */
  timeoutMs?: number;
  /** Rejects with signal.reason and withdraws the request; nothing is taken. */
  signal?: AbortSignal;
}

/** What tryAcquireKey() returns. */
export interface KeyTry {
  granted: boolean;
  /**
   * Refused: the CLOCK_MONOTONIC ns the request could be granted at,
   * behind the key's sleepers; 0 when granted.
   */
  readyNs: number;
  /** Refused: ms from now to readyNs (at least 1); 0 when granted. */
  retryAfterMs: number;
  /** Refused: whole seconds, at least 1, for an HTTP Retry-After; 0 when granted. */
  retryAfter: number;
}

/** One key's state (struct rl_key_state), read without creating it. */
export interface KeyState {
  key: Buffer;
  /** Tokens the key's bucket holds (the burst for a key without state). */
  available: number;
  /** CLOCK_MONOTONIC ns the bucket is full again; 0 when full now. */
  fullNs: number;
  /** Requests sleeping on the key (blocking acquires of other processes). */
  waiters: number;
  /** Does the limiter keep state for the key? */
  kept: boolean;
}

/** The counts of a keyed limiter's keys (struct rl_keys_stats). */
export interface KeysStats {
  /** Keys with state now. */
  keys: number;
  /** The most keys with state at once (config.keys in force). */
  keysMax: number;
  /** Keys given state since the limiter was created. */
  created: number;
  /** Keys dropped since, their buckets full. */
  evicted: number;
  /** Requests refused with ENOSPC since. */
  refused: number;
  /** Requests sleeping now, on all keys. */
  waiters: number;
}

/** The errors thrown and rejected: a system error of the kernel's. */
export interface RateLimitError extends Error {
  /** 'EACCES', 'ETIMEDOUT', 'EINVAL', 'ENOENT' ... */
  code: string;
  /** The negative errno, as Node's system errors have it. */
  errno: number;
  /** The library call that failed, e.g. 'rl_attach'. */
  syscall: string;
  /**
   * Keyed ETIMEDOUT and ENOSPC: the kernel's ready time (ns); 0 for a
   * request that timed out before it reached the kernel.
   */
  readyNs?: number;
  /** Keyed ETIMEDOUT and ENOSPC: ms from the error to readyNs. */
  retryAfterMs?: number;
  /** Keyed ETIMEDOUT and ENOSPC: whole seconds, at least 1. */
  retryAfter?: number;
}

/** Tokens acquire() granted; on a limiter with a concurrency limit, permits. */
export declare class Permit {
  readonly count: number;
  readonly released: boolean;
  /**
   * CLOCK_MONOTONIC ns at which the tokens existed on the limiter's
   * schedule (the instant the bucket's bound holds for), as the kernel
   * reports it; the time of the grant for a module without queued acquires.
   */
  readonly readyNs: number;
  /** ns from the request to its collection, as the kernel reports it. */
  readonly waitNs: number;
  /** Gives the permits back (once; a no-op without a concurrency limit). */
  release(): void;
  [Symbol.dispose](): void;
  [Symbol.asyncDispose](): Promise<void>;
}

export declare class Limiter {
  /** A client of the named limiter (the kernel checks its mode). */
  static attach(name: string, options?: AttachOptions): Limiter;
  /** A private limiter of this process. */
  static create(config: ConfigInput): Limiter;
  /** Removes a name; attached clients keep working. */
  static unlink(name: string): void;

  readonly fd: number;
  /** The name given to attach(), null for a private limiter. */
  readonly name: string | null;
  /** acquire() queues in the kernel (else it polls with timers). */
  readonly queued: boolean;

  /** n tokens (default 1) now, or false; never waits. */
  tryAcquire(n?: number): boolean;
  /** n tokens (default 1), in the kernel's order of service. */
  acquire(n?: number, options?: AcquireOptions): Promise<Permit>;
  /** fn run with n tokens acquired; the permit released after it. */
  withPermit<T>(n: number, fn: (permit: Permit) => T | Promise<T>,
    options?: AcquireOptions): Promise<T>;
  withPermit<T>(fn: (permit: Permit) => T | Promise<T>,
    options?: AcquireOptions): Promise<T>;
  /** Gives back n concurrency permits this client holds. */
  release(n?: number): void;
  /** Gives back n rate tokens acquired and not used. */
  refund(n?: number): void;
  /**
   * Keyed limiters: n tokens (default 1) of key's bucket now, or not;
   * never waits. Throws ENOSPC (with readyNs, retryAfter) for a new key
   * when the limiter keeps as many keys as config.keys allows.
   */
  tryAcquireKey(key: Key, n?: number): KeyTry;
  /**
   * Keyed limiters: n tokens (default 1) of key's bucket, queued in the
   * kernel's line of the key: requests of one key in arrival order
   * (Documentation/node.md).
   */
  acquireKey(key: Key, n?: number, options?: AcquireKeyOptions): Promise<Permit>;
  /** Keyed limiters: one key's state, read without creating it. */
  keyState(key: Key): KeyState;
  /** Keyed limiters: the counts of the keys. */
  keysStats(): KeysStats;
  stats(): Stats;
  config(): ConfigOutput;
  /** The configuration as a rate string, e.g. "200/s:20". */
  rate(): string;
  setConfig(config: ConfigInput): void;
  /** Closes the fd: pending acquires reject with ECANCELED. */
  close(): void;
  [Symbol.dispose](): void;
}

export declare function parseRate(spec: string): Config;
export declare function formatRate(config: ConfigInput): string;
/** Requests one client keeps in the kernel's queue at most. */
export declare const QUEUED_MAX: number;
/** The longest key of a keyed limiter, in bytes (64). */
export declare const KEY_MAX: number;
