/**
 * The side panel's budget meter: spend against each limit set for the run and the session, the
 * same figures the cell panel shows, from the agent's `budget` events. The figures belong to a
 * run and a session: when that run ends its figures say "last run", a new run drops them (its
 * own first `budget` event brings new ones; a run without limits sends none) and a run of
 * another session drops everything, so the line never passes a finished run's or another
 * session's spend off as current.
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

/** What the run figures of a budget event stand for now. */
export type RunScope = 'current' | 'ended' | 'dropped';

/**
 * "run $0.12 / $0.5 · session 3 tool calls / 10 tool calls", or '' when no limit is set.
 * `run`: whether the event's run is going on, ended ("last run") or followed by another run
 * (its figures are left out).
 */
export function budgetSummary(event: BudgetEvent, run: RunScope = 'current'): string {
  const parts: string[] = [];
  const dropped = run === 'dropped';
  const scopes: [string, { [key: string]: number | null }, { [key: string]: number }][] =
    [
      [
        run === 'ended' ? 'last run' : 'run',
        dropped ? {} : event.run_spent,
        dropped ? {} : event.run_limits
      ],
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
    return this.latest === null ? '' : budgetSummary(this.latest, this.run);
  }

  /** A `budget` event of `runId`; returns the new summary. */
  update(runId: string, sessionId: string | null, event: BudgetEvent): string {
    this.latest = event;
    this.runId = runId;
    this.sessionId = sessionId;
    this.run = 'current';
    return this.summary;
  }

  /**
   * A run started: figures of another session go, those of an earlier run of this one keep
   * only their session part. Returns the new summary, or null when it did not change.
   */
  runStarted(runId: string, sessionId: string | null): string | null {
    if (this.latest === null || runId === this.runId) {
      return null;
    }
    return this.change(() => {
      if (sessionId !== this.sessionId) {
        this.clear();
      } else {
        this.run = 'dropped';
      }
    });
  }

  /** `runId` ended: its figures are the last run's. Returns the new summary, or null. */
  runFinished(runId: string): string | null {
    if (this.latest === null || runId !== this.runId || this.run !== 'current') {
      return null;
    }
    return this.change(() => {
      this.run = 'ended';
    });
  }

  clear(): void {
    this.latest = null;
    this.runId = null;
    this.sessionId = null;
    this.run = 'current';
  }

  private change(apply: () => void): string | null {
    const before = this.summary;
    apply();
    return this.summary === before ? null : this.summary;
  }

  private latest: BudgetEvent | null = null;
  private runId: string | null = null;
  private sessionId: string | null = null;
  private run: RunScope = 'current';
}
