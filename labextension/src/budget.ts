/**
 * The side panel's budget meter: spend against each limit set for the run and the session, the
 * same figures the cell panel shows, from the agent's `budget` events. The figures belong to a
 * run and a session: when that run ends only the session's remain, and a new run starts with
 * none until its own first `budget` event (a run without limits sends none), so the line never
 * shows a finished run's or another session's spend.
 */

import type { AgentEvent } from './protocol';

export type BudgetEvent = Extract<AgentEvent, { type: 'budget' }>;

/** A limit's key in `run_limits` → its key in `run_spent`, and how to show an amount. */
const LABELS: { [limit: string]: [string, (value: number) => string] } = {
  max_cost_usd: ['cost_usd', value => `$${trimZeros(value.toFixed(4))}`],
  max_tokens: ['tokens', value => `${Math.trunc(value).toLocaleString('en-US')} tokens`],
  max_tool_calls: ['tool_calls', value => `${Math.trunc(value)} tool calls`],
  max_wall_seconds: ['wall_seconds', value => `${value.toFixed(0)} s`]
};

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/**
 * "run $0.12 / $0.5 · session 3 tool calls / 10 tool calls", or '' when no limit is set.
 * `runEnded`: the run the event came from is over, so only the session's figures still hold.
 */
export function budgetSummary(event: BudgetEvent, runEnded = false): string {
  const parts: string[] = [];
  const scopes: [string, { [key: string]: number | null }, { [key: string]: number }][] =
    [
      ['run', runEnded ? {} : event.run_spent, runEnded ? {} : event.run_limits],
      ['session', event.session_spent, event.session_limits]
    ];
  for (const [scope, spent, limits] of scopes) {
    for (const [name, limit] of Object.entries(limits)) {
      const label = LABELS[name];
      if (!label) {
        continue; // a limit a newer kernel knows and this panel does not
      }
      const [key, format] = label;
      const value = spent[key];
      const used = value === null || value === undefined ? '?' : format(value);
      parts.push(`${scope} ${used} / ${format(limit)}`);
    }
  }
  return parts.join(' · ');
}

/** The latest budget figures and the run and session they belong to. */
export class BudgetLine {
  /** What the line says now ('' when no limit applies). */
  get summary(): string {
    return this.latest === null ? '' : budgetSummary(this.latest, this.runEnded);
  }

  /** A `budget` event of `runId`; returns the new summary. */
  update(runId: string, sessionId: string | null, event: BudgetEvent): string {
    this.latest = event;
    this.runId = runId;
    this.sessionId = sessionId;
    this.runEnded = false;
    return this.summary;
  }

  /**
   * A run started: figures of another session go, and those of an earlier run of this one
   * keep only their session part. Returns the new summary, or null when it did not change.
   */
  runStarted(runId: string, sessionId: string | null): string | null {
    if (this.latest === null || runId === this.runId) {
      return null;
    }
    const before = this.summary;
    if (sessionId !== this.sessionId) {
      this.latest = null;
    } else {
      this.runEnded = true;
    }
    return this.summary === before ? null : this.summary;
  }

  /** `runId` ended: its run figures go. Returns the new summary, or null when unchanged. */
  runFinished(runId: string): string | null {
    if (this.latest === null || runId !== this.runId || this.runEnded) {
      return null;
    }
    const before = this.summary;
    this.runEnded = true;
    return this.summary === before ? null : this.summary;
  }

  clear(): void {
    this.latest = null;
    this.runId = null;
    this.sessionId = null;
    this.runEnded = false;
  }

  private latest: BudgetEvent | null = null;
  private runId: string | null = null;
  private sessionId: string | null = null;
  private runEnded = false;
}
