import { describe, expect, it } from 'vitest';

import { budgetSummary, BudgetEvent } from '../src/budget';
import { KernelMessage } from '../src/protocol';
import { Transcript } from '../src/transcript';

function budget(fields: Partial<BudgetEvent>): BudgetEvent {
  return {
    type: 'budget',
    run_spent: {},
    run_limits: {},
    session_spent: {},
    session_limits: {},
    ...fields
  };
}

describe('budget meter', () => {
  it('shows spend against every limit of the run and the session', () => {
    const text = budgetSummary(
      budget({
        run_spent: { cost_usd: 0.1234, tool_calls: 3 },
        run_limits: { max_cost_usd: 0.5, max_tool_calls: 10 },
        session_spent: { tokens: 12000, wall_seconds: null },
        session_limits: { max_tokens: 100000, max_wall_seconds: 600 }
      })
    );
    expect(text).toBe(
      'run $0.1234 / $0.5 · run 3 tool calls / 10 tool calls · ' +
        'session 12,000 tokens / 100,000 tokens · session ? / 600 s'
    );
  });

  it('is empty without limits and skips limits it does not know', () => {
    expect(budgetSummary(budget({}))).toBe('');
    expect(budgetSummary(budget({ run_limits: { max_gpu_hours: 1 } }))).toBe('');
  });

  it('reaches the panel as a budget change, and a reached limit adds a notice', () => {
    const t = new Transcript();
    const event = (e: BudgetEvent, seq: number): KernelMessage => ({
      type: 'agent.event',
      run_id: 'r',
      seq,
      event: e
    });
    t.apply({
      type: 'run.started',
      run_id: 'r',
      session_id: 's',
      prompt: 'go',
      source: 'panel'
    });
    const limits = { run_limits: { max_tool_calls: 2 } };
    const first = t.apply(event(budget({ ...limits, run_spent: { tool_calls: 1 } }), 0));
    expect(first).toEqual([{ op: 'budget', budget: 'run 1 tool calls / 2 tool calls' }]);
    expect(t.budget).toBe('run 1 tool calls / 2 tool calls');
    const reached = t.apply(
      event(
        budget({
          ...limits,
          run_spent: { tool_calls: 2 },
          reached: 'run budget of 2 tool calls reached (2)'
        }),
        1
      )
    );
    expect(reached.map(change => change.op)).toEqual(['budget', 'add']);
    t.reset();
    expect(t.budget).toBe('');
  });

  it('calls a finished run the last run and keeps no figures of another session', () => {
    const t = new Transcript();
    const start = (runId: string, sessionId: string): KernelMessage => ({
      type: 'run.started',
      run_id: runId,
      session_id: sessionId,
      prompt: 'go',
      source: 'panel'
    });
    const spend = (runId: string, seq: number, e: BudgetEvent): KernelMessage => ({
      type: 'agent.event',
      run_id: runId,
      seq,
      event: e
    });
    const both = budget({
      run_spent: { tool_calls: 1 },
      run_limits: { max_tool_calls: 5 },
      session_spent: { tool_calls: 4 },
      session_limits: { max_tool_calls: 20 }
    });
    t.apply(start('r1', 's'));
    t.apply(spend('r1', 0, both));
    expect(t.budget).toBe(
      'run 1 tool calls / 5 tool calls · session 4 tool calls / 20 tool calls'
    );
    // The run ends: its figures are the last run's, no longer current.
    const ended = t.apply({ type: 'run.status', run_id: 'r1', status: 'completed' });
    expect(ended).toContainEqual({
      op: 'budget',
      budget:
        'last run 1 tool calls / 5 tool calls · session 4 tool calls / 20 tool calls'
    });
    // The next run drops them: only the session's figures hold until it sends its own.
    const next = t.apply(start('r2', 's'));
    expect(next).toContainEqual({
      op: 'budget',
      budget: 'session 4 tool calls / 20 tool calls'
    });
    // A run with only a run limit leaves nothing once the next run starts.
    t.apply(
      spend(
        'r2',
        0,
        budget({ run_spent: { tool_calls: 1 }, run_limits: { max_tool_calls: 3 } })
      )
    );
    t.apply({ type: 'run.status', run_id: 'r2', status: 'cancelled' });
    expect(t.budget).toBe('last run 1 tool calls / 3 tool calls');
    t.apply(start('r2b', 's'));
    expect(t.budget).toBe('');
    // Another session's run (no limits there, so no budget event) shows none of this one's.
    t.apply(start('r3', 's'));
    t.apply(spend('r3', 0, both));
    const other = t.apply(start('r4', 'another-session'));
    expect(other).toContainEqual({ op: 'budget', budget: '' });
    expect(t.budget).toBe('');
  });
});
