/**
 * The side panel's budget meter: spend against each limit set for the run and the session, the
 * same figures the cell panel shows, from the agent's `budget` events.
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

/** "run $0.12 / $0.5 · session 3 tool calls / 10 tool calls", or '' when no limit is set. */
export function budgetSummary(event: BudgetEvent): string {
  const parts: string[] = [];
  const scopes: [string, { [key: string]: number | null }, { [key: string]: number }][] =
    [
      ['run', event.run_spent, event.run_limits],
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
