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
}

/**
 * What a configuration may be given as: a rate string ("100/s:10",
 * rl_parse_rate(3)), or fields, whose rate may be a rate string that the
 * other fields then amend (e.g. { rate: "200/s", concurrency: 4 }).
 */
export type ConfigInput =
  | string
  | (Partial<Omit<Config, 'rate'>> & { rate?: number | string; periodMs?: number });

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

/** The errors thrown and rejected: a system error of the kernel's. */
export interface RateLimitError extends Error {
  /** 'EACCES', 'ETIMEDOUT', 'EINVAL', 'ENOENT' ... */
  code: string;
  /** The negative errno, as Node's system errors have it. */
  errno: number;
  /** The library call that failed, e.g. 'rl_attach'. */
  syscall: string;
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
  stats(): Stats;
  config(): Config;
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
