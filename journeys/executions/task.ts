// What the runner hands the journey task threads (workers/journey-task.ts) and what crosses the
// MessagePort of an activation: a host call out, its answer back.
import type { MessagePort } from 'node:worker_threads';
import type { ActivationInput, HostCall, RenderInput } from '../runtime/mod.js';
import type { JournalResult } from '../../schemas/mod.js';

export type JourneyTask =
  | { kind: 'activate'; input: Omit<ActivationInput, 'host'>; port: MessagePort }
  | { kind: 'render'; input: RenderInput }
  /** Answered once the thread's engine is loaded: the runner waits for it before a first activation. */
  | { kind: 'warm' };

/** What a props thread (workers/props-task.ts) is given to answer once it is loaded. */
export const PROPS_WARM_UP = 'warm';

export type HostRequest = { id: number; call: Omit<HostCall, 'signal'> };
export type HostAnswer = { id: number; result?: JournalResult; error?: string };
