import { describe, expect, it } from 'vitest';

import { AgentEvent, KernelMessage, PermissionDecision } from '../src/protocol';
import { ToolItem, Transcript, TranscriptItem } from '../src/transcript';

const RUN = 'run-1';

function started(runId = RUN, prompt = 'plot revenue'): KernelMessage {
  return {
    type: 'run.started',
    run_id: runId,
    session_id: 's-1',
    prompt,
    source: 'panel'
  };
}

/** Envelopes with consecutive seq numbers for one run. */
function events(list: AgentEvent[], runId = RUN, firstSeq = 0): KernelMessage[] {
  return list.map((event, index) => ({
    type: 'agent.event',
    run_id: runId,
    seq: firstSeq + index,
    event
  }));
}

function kinds(items: TranscriptItem[]): string[] {
  return items.map(item => item.kind);
}

function fakeClock(times: number[]): () => number {
  let index = 0;
  return () => times[Math.min(index++, times.length - 1)];
}

describe('text streaming', () => {
  it('coalesces deltas into one text item and closes it with the whole text', () => {
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'text_delta', delta: 'Hel' },
        { type: 'text_delta', delta: 'lo ' },
        { type: 'text_delta', delta: 'world' }
      ])
    ]);
    expect(kinds(t.items)).toEqual(['user', 'text']);
    expect(t.items[1]).toMatchObject({
      text: 'Hello world',
      streaming: true,
      final: false
    });

    const changes = t.apply(
      events([{ type: 'final', content: 'Hello world!' }], RUN, 3)[0]
    );
    expect(changes).toEqual([{ op: 'update', item: t.items[1] }]);
    expect(t.items[1]).toMatchObject({
      text: 'Hello world!',
      streaming: false,
      final: true
    });
  });

  it('reports a delta as an update of the same item, not a new one', () => {
    const t = Transcript.from([
      started(),
      ...events([{ type: 'text_delta', delta: 'a' }])
    ]);
    const changes = t.apply(events([{ type: 'text_delta', delta: 'b' }], RUN, 1)[0]);
    expect(changes.map(change => change.op)).toEqual(['update']);
    expect(t.items).toHaveLength(2);
  });

  it('keeps a final answer without deltas as its own item and skips an empty one', () => {
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'final', content: '' },
        { type: 'final', content: 'Done.' }
      ])
    ]);
    expect(kinds(t.items)).toEqual(['user', 'text']);
    expect(t.items[1]).toMatchObject({ text: 'Done.', final: true, streaming: false });
  });

  it('removes the text of a failed model call before the retry', () => {
    const t = Transcript.from([
      started(),
      ...events([{ type: 'text_delta', delta: 'Half of an answer' }])
    ]);
    const partial = t.items[1];
    const changes = t.apply(events([{ type: 'text_discarded' }], RUN, 1)[0]);
    expect(changes).toEqual([{ op: 'remove', item: partial }]);
    expect(kinds(t.items)).toEqual(['user']);
    t.apply(events([{ type: 'text_delta', delta: 'The whole answer.' }], RUN, 2)[0]);
    t.apply(events([{ type: 'final', content: 'The whole answer.' }], RUN, 3)[0]);
    expect(kinds(t.items)).toEqual(['user', 'text']);
    expect(t.items[1]).toMatchObject({ text: 'The whole answer.', final: true });
  });

  it('keeps the citations of a final answer', () => {
    const citations = [{ title: 'Release notes', url: 'https://pandas.example/3.1' }];
    const t = Transcript.from([
      started(),
      ...events([{ type: 'final', content: 'pandas 3.1 is out.', citations }])
    ]);
    expect(t.items[1]).toMatchObject({ text: 'pandas 3.1 is out.', citations });
  });

  it('separates reasoning from text', () => {
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'reasoning_delta', delta: 'think' },
        { type: 'text_delta', delta: 'answer' }
      ])
    ]);
    expect(kinds(t.items)).toEqual(['user', 'reasoning', 'text']);
    expect(t.items[1]).toMatchObject({ text: 'think', streaming: false });
  });

  it('ignores a replayed event with a seq it has already seen', () => {
    const stream = events([
      { type: 'text_delta', delta: 'one ' },
      { type: 'text_delta', delta: 'two' }
    ]);
    const t = Transcript.from([started(), ...stream, ...stream]);
    expect((t.items[1] as { text: string }).text).toBe('one two');
  });

  it('shows a prompt once even when run.started arrives twice', () => {
    const t = Transcript.from([started(), started()]);
    expect(kinds(t.items)).toEqual(['user']);
    expect(t.activeRunId).toBe(RUN);
  });
});

describe('tool cards', () => {
  const call: AgentEvent[] = [
    { type: 'text', content: 'Let me read it.' },
    { type: 'step_start', step_id: 'toolu_1', title: 'read', step_number: 1 },
    {
      type: 'tool_call',
      tool: 'read',
      args: { file_path: 'a.py' },
      tool_call_id: 'toolu_1'
    }
  ];

  it('creates one card per call with its arguments, running until the result', () => {
    const t = Transcript.from([started(), ...events(call)]);
    expect(kinds(t.items)).toEqual(['user', 'text', 'tool']);
    const card = t.items[2] as ToolItem;
    expect(card).toMatchObject({
      tool: 'read',
      toolCallId: 'toolu_1',
      args: { file_path: 'a.py' },
      status: 'running',
      result: null
    });
  });

  it('takes the duration from step_complete and the result from tool_result', () => {
    const t = Transcript.from([
      started(),
      ...events([
        ...call,
        {
          type: 'tool_result',
          tool: 'read',
          result: '    1  x = 1',
          tool_call_id: 'toolu_1'
        },
        {
          type: 'step_complete',
          step_id: 'toolu_1',
          status: 'completed',
          duration_ms: 42
        }
      ])
    ]);
    const card = t.items[2] as ToolItem;
    expect(card).toMatchObject({
      status: 'completed',
      durationMs: 42,
      result: '    1  x = 1',
      isError: false
    });
  });

  it('measures the duration with the clock when step_complete is missing', () => {
    const t = Transcript.from(
      [
        started(),
        ...events([
          { type: 'tool_call', tool: 'python', args: {}, tool_call_id: 'toolu_9' },
          { type: 'tool_result', tool: 'python', result: 'ok', tool_call_id: 'toolu_9' }
        ])
      ],
      fakeClock([1000, 1250])
    );
    expect((t.items[1] as ToolItem).durationMs).toBe(250);
  });

  it('marks errors and denials', () => {
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'tool_call', tool: 'read', args: {}, tool_call_id: 'a' },
        {
          type: 'tool_result',
          tool: 'read',
          result: 'Error executing tool: no such file',
          tool_call_id: 'a',
          is_error: true
        },
        { type: 'step_complete', step_id: 'a', status: 'error', duration_ms: 1 },
        { type: 'tool_call', tool: 'write', args: {}, tool_call_id: 'b' },
        {
          type: 'tool_result',
          tool: 'write',
          result: 'Permission denied: permission denied',
          tool_call_id: 'b',
          is_error: true,
          data: { outcome: 'denied' }
        },
        { type: 'step_complete', step_id: 'b', status: 'error', duration_ms: 1 }
      ])
    ]);
    expect((t.items[1] as ToolItem).status).toBe('error');
    expect((t.items[2] as ToolItem).status).toBe('denied');
  });

  it('keeps images from the result parts (data URLs only)', () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'tool_call', tool: 'view_image', args: {}, tool_call_id: 'i' },
        {
          type: 'tool_result',
          tool: 'view_image',
          result: '[image]',
          tool_call_id: 'i',
          parts: [
            { type: 'text', text: 'plot' },
            { type: 'image_url', image_url: { url: png } },
            { type: 'image_url', image_url: { url: 'https://example.com/x.png' } }
          ],
          output_ref: 'ref_1'
        }
      ])
    ]);
    const card = t.items[1] as ToolItem;
    expect(card.images).toEqual([{ url: png }]);
    expect(card.outputRef).toBe('ref_1');
  });

  it("takes the diff, summary, edit and outcome from the result's data, never its text", () => {
    const diff = '--- a.py\n+++ a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2';
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'tool_call', tool: 'edit', args: {}, tool_call_id: 'e' },
        {
          type: 'tool_result',
          tool: 'edit',
          result: 'the model reads this',
          tool_call_id: 'e',
          data: {
            summary: 'Replaced 1 occurrence',
            diff,
            file_path: 'a.py',
            edit_id: 'e-1'
          }
        },
        // Text that looks like a diff, a JSON result or a denial is only text.
        { type: 'tool_call', tool: 'git_diff', args: {}, tool_call_id: 'g' },
        {
          type: 'tool_result',
          tool: 'git_diff',
          result: JSON.stringify({ diff, edit_id: 'x' }),
          tool_call_id: 'g'
        },
        { type: 'tool_call', tool: 'other', args: {}, tool_call_id: 'o' },
        {
          type: 'tool_result',
          tool: 'other',
          result: 'Permission denied: no',
          tool_call_id: 'o',
          is_error: true
        }
      ])
    ]);
    expect(t.items[1]).toMatchObject({
      diff,
      summary: 'Replaced 1 occurrence',
      editId: 'e-1'
    });
    expect(t.items[2]).toMatchObject({ diff: null, editId: null, status: 'completed' });
    expect((t.items[3] as ToolItem).status).toBe('error');
  });

  it('records the background job a call became, from its data', () => {
    const t = Transcript.from([
      started(),
      ...events([
        {
          type: 'tool_call',
          tool: 'python',
          args: { code: 'train()' },
          tool_call_id: 'p'
        },
        {
          type: 'tool_result',
          tool: 'python',
          result: 'still running: now background job job-7',
          tool_call_id: 'p',
          data: { job_id: 'job-7' }
        },
        { type: 'tool_call', tool: 'python', args: { code: '1' }, tool_call_id: 'q' },
        { type: 'tool_result', tool: 'python', result: 'job-8', tool_call_id: 'q' }
      ])
    ]);
    expect(t.items[1]).toMatchObject({ jobId: 'job-7', status: 'completed' });
    expect(t.items[2]).toMatchObject({ jobId: null });
  });

  it('stops open cards when the run is cancelled and notes it', () => {
    const t = Transcript.from([
      started(),
      ...events([{ type: 'tool_call', tool: 'python', args: {}, tool_call_id: 'p' }]),
      { type: 'run.status', run_id: RUN, status: 'cancelled' }
    ]);
    expect((t.items[1] as ToolItem).status).toBe('cancelled');
    expect(t.items[2]).toMatchObject({
      kind: 'notice',
      level: 'warning',
      text: 'Stopped.'
    });
    expect(t.activeRunId).toBeNull();
  });
});

describe('session forks', () => {
  it('says which session this conversation continues in', () => {
    const t = Transcript.from([
      started(),
      ...events([{ type: 'session.forked', session_id: 's-2', forked_from: 's-1' }])
    ]);
    expect(t.items[1]).toMatchObject({
      kind: 'notice',
      level: 'warning',
      text:
        'Another kernel saved session s-1 while this one had it open: this conversation ' +
        "continues as session s-2, so neither kernel's turns are lost."
    });
  });
});

describe('permission cards', () => {
  const request: KernelMessage = {
    type: 'agent.event',
    run_id: RUN,
    seq: 10,
    event: {
      type: 'permission.request',
      request_id: 'perm-1',
      tool: 'write',
      tool_call_id: 'w',
      title: 'Run tool?',
      message: 'write a.py (5 bytes)',
      args: { file_path: 'a.py' },
      remember_rules: ['write']
    }
  };

  function resolved(decision: PermissionDecision, reason?: string): KernelMessage {
    return {
      type: 'agent.event',
      run_id: RUN,
      seq: 11,
      event: {
        type: 'permission.resolved',
        request_id: 'perm-1',
        tool_call_id: 'w',
        decision,
        ...(reason ? { reason } : {})
      }
    };
  }

  it('opens an approval card and marks the tool as waiting', () => {
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'tool_call', tool: 'write', args: {}, tool_call_id: 'w' },
        {
          type: 'permission.preview',
          tool: 'write',
          tool_call_id: 'w',
          diff: '--- a.py\n+++ a.py\n@@ -0,0 +1 @@\n+hello'
        }
      ]),
      request,
      { type: 'run.status', run_id: RUN, status: 'awaiting_ui' }
    ]);
    expect(kinds(t.items)).toEqual(['user', 'tool', 'permission']);
    expect(t.items[1]).toMatchObject({ status: 'awaiting_approval' });
    expect((t.items[1] as ToolItem).diff).toContain('+hello');
    expect(t.items[2]).toMatchObject({
      permissionRequestId: 'perm-1',
      title: 'Run tool?',
      message: 'write a.py (5 bytes)',
      rememberRules: ['write'],
      decision: null
    });
    expect(t.runs.get(RUN)?.status).toBe('awaiting_ui');
  });

  it('shows a request once when a replay and the live stream both carry it', () => {
    const t = Transcript.from([started(), request, request]);
    expect(kinds(t.items)).toEqual(['user', 'permission']);
  });

  it('records the decision and its reason, and resumes or denies the tool', () => {
    const allowed = Transcript.from([
      started(),
      ...events([{ type: 'tool_call', tool: 'write', args: {}, tool_call_id: 'w' }]),
      request,
      resolved('allow_remember')
    ]);
    expect(allowed.items[2]).toMatchObject({ decision: 'allow_remember', reason: null });
    expect((allowed.items[1] as ToolItem).status).toBe('running');

    const denied = Transcript.from([
      started(),
      ...events([{ type: 'tool_call', tool: 'write', args: {}, tool_call_id: 'w' }]),
      request,
      resolved('deny', 'use b.py')
    ]);
    expect(denied.items[2]).toMatchObject({ decision: 'deny', reason: 'use b.py' });
    expect((denied.items[1] as ToolItem).status).toBe('denied');
  });

  it('expires an unanswered question when the run ends', () => {
    const t = Transcript.from([
      started(),
      request,
      { type: 'run.status', run_id: RUN, status: 'error', message: 'boom' }
    ]);
    expect(t.items[1]).toMatchObject({ decision: 'expired' });
    expect(t.items[2]).toMatchObject({ kind: 'notice', level: 'error', text: 'boom' });
  });

  it('ignores an answer to an unknown request', () => {
    const t = Transcript.from([started()]);
    expect(t.resolvePermission('nope', 'allow', null)).toEqual([]);
  });
});

describe('todos, usage and runs', () => {
  it('replaces the todo list on every update', () => {
    const t = Transcript.from([
      started(),
      ...events([
        {
          type: 'todos.updated',
          todos: [
            {
              id: '1',
              content: 'load data',
              status: 'in_progress',
              activeForm: 'Loading'
            }
          ]
        }
      ]),
      ...events(
        [
          {
            type: 'todos.updated',
            session_id: 's-1',
            todos: [
              { id: '1', content: 'load data', status: 'completed' },
              { id: '2', content: 'plot', status: 'pending' }
            ]
          }
        ],
        RUN,
        1
      )
    ]);
    expect(t.todos.map(todo => [todo.id, todo.status])).toEqual([
      ['1', 'completed'],
      ['2', 'pending']
    ]);
  });

  // One model call: its own figures, and the kernel session's running totals.
  const usage = (
    input: number,
    output: number,
    cost: number | null,
    left: number,
    sessionIn = 0,
    sessionOut = 0
  ): AgentEvent => ({
    type: 'usage',
    model: 'claude-sonnet-5-5',
    input_tokens: input,
    output_tokens: output,
    cache_read_tokens: 10,
    total_input_tokens: sessionIn,
    total_output_tokens: sessionOut,
    cost_usd: cost,
    total_cost_usd: null,
    context_limit: 200000,
    context_left_percent: left
  });

  it('counts each model call once across runs (session totals are not re-added)', () => {
    const t = Transcript.from([
      started(),
      ...events([usage(100, 10, 0.001, 99, 100, 10), usage(200, 20, 0.002, 98, 300, 30)]),
      { type: 'run.status', run_id: RUN, status: 'completed' },
      started('run-2', 'again'),
      // The second run's first call reports session totals that include the first run.
      ...events([usage(50, 5, 0.0005, 97, 350, 35)], 'run-2')
    ]);
    expect(t.usage).toMatchObject({
      model: 'claude-sonnet-5-5',
      inputTokens: 350,
      outputTokens: 35,
      cacheReadTokens: 30,
      demoCalls: 0,
      contextLeftPercent: 97,
      contextLimit: 200000
    });
    expect(t.usage.costUsd).toBeCloseTo(0.0035, 10);
  });

  it('shows the cost as unknown once any call has no price', () => {
    const t = Transcript.from([started(), ...events([usage(100, 10, null, 99)])]);
    expect(t.usage.costUsd).toBeNull();
  });

  it('counts offline demo calls apart and never prices them', () => {
    const t = Transcript.from([
      { ...started(), demo: true },
      ...events([usage(100, 10, 0.5, 99, 100, 10)])
    ]);
    expect(t.usage).toMatchObject({ inputTokens: 100, demoCalls: 1, costUsd: 0 });
    expect(t.runs.get(RUN)?.demo).toBe(true);
  });

  it('tracks run status, source and the active run', () => {
    const t = Transcript.from([
      {
        type: 'run.started',
        run_id: 'm',
        session_id: 's',
        prompt: 'from a cell',
        source: 'magic'
      }
    ]);
    expect(t.items[0]).toMatchObject({
      kind: 'user',
      source: 'magic',
      text: 'from a cell'
    });
    expect(t.activeRunId).toBe('m');
    t.apply({ type: 'run.status', run_id: 'm', status: 'completed' });
    expect(t.activeRunId).toBeNull();
    expect(t.apply({ type: 'run.status', run_id: 'm', status: 'completed' })).toEqual([]);
  });

  it('restores the active run and kernel facts from hello', () => {
    const t = Transcript.from([
      {
        type: 'hello',
        protocol: 1,
        session_id: 's',
        model: 'claude-sonnet-5-5',
        approval_mode: 'minimal',
        api_key_configured: true,
        active_run: { run_id: 'r', session_id: 's', prompt: 'p', source: 'panel' }
      }
    ]);
    expect(t.kernel).toEqual({
      sessionId: 's',
      model: 'claude-sonnet-5-5',
      approvalMode: 'minimal',
      apiKeyConfigured: true
    });
    expect(t.activeRunId).toBe('r');
    expect(kinds(t.items)).toEqual(['user']);
  });

  it('takes a started run as proof that a key was set after the hello', () => {
    const t = Transcript.from([
      { type: 'hello', protocol: 1, session_id: null, api_key_configured: false }
    ]);
    expect(t.kernel.apiKeyConfigured).toBe(false);
    const changes = t.apply({
      type: 'run.started',
      run_id: 'k',
      session_id: 's',
      prompt: 'hi',
      source: 'magic'
    });
    expect(changes[0]).toEqual({ op: 'kernel', kernel: t.kernel });
    expect(t.kernel.apiKeyConfigured).toBe(true);
  });

  it('closes streaming text when the run completes, and reset empties everything', () => {
    const t = Transcript.from([
      started(),
      ...events([{ type: 'text_delta', delta: 'partial' }]),
      { type: 'run.status', run_id: RUN, status: 'completed' }
    ]);
    expect(t.items[1]).toMatchObject({ streaming: false });
    expect(t.reset()).toEqual([{ op: 'reset' }]);
    expect(t.items).toEqual([]);
    expect(t.runs.size).toBe(0);
  });

  it('ignores unknown messages and events', () => {
    const t = Transcript.from([started()]);
    expect(t.apply({ type: 'nonsense' } as unknown as KernelMessage)).toEqual([]);
    expect(
      t.apply(events([{ type: 'future_event' } as unknown as AgentEvent], RUN, 0)[0])
    ).toEqual([]);
  });

  it('applies an event in constant time however long the transcript is', () => {
    const t = new Transcript();
    t.apply(started());
    let seq = 0;
    for (let i = 0; i < 2000; i++) {
      const id = `c${i}`;
      for (const message of events(
        [
          { type: 'tool_call', tool: 'read', args: {}, tool_call_id: id },
          { type: 'tool_result', tool: 'read', result: 'x', tool_call_id: id }
        ],
        RUN,
        seq
      )) {
        t.apply(message);
      }
      seq += 2;
    }
    // The change list of one event names only the item it touched.
    const changes = t.apply(events([{ type: 'text_delta', delta: 'z' }], RUN, seq)[0]);
    expect(changes).toHaveLength(1);
    expect(t.items).toHaveLength(2002);
  });
});

describe('background jobs and budgets', () => {
  function job(
    state: 'running' | 'stopped',
    lines: string[],
    percent: number | null
  ): KernelMessage {
    return {
      type: 'job.updated',
      job: {
        job_id: 'job-1',
        kind: 'python',
        title: 'train()',
        state,
        elapsed_s: 2.5,
        summary: null,
        last_lines: lines,
        progress: percent === null ? null : { percent, done: `${percent}`, total: '100' }
      }
    };
  }

  it('adds one card per job under the active run and updates it in place', () => {
    const t = Transcript.from([started()], fakeClock([1000, 2000, 3000]));
    const added = t.apply(job('running', ['epoch 1'], 10));
    expect(added).toHaveLength(1);
    expect(added[0].op).toBe('add');
    expect(t.items[1]).toMatchObject({ kind: 'job', runId: RUN });
    const updated = t.apply(job('stopped', ['epoch 1', 'epoch 2'], null));
    expect(updated).toEqual([{ op: 'update', item: t.items[1] }]);
    expect(kinds(t.items)).toEqual(['user', 'job']);
    const item = t.items[1];
    expect(item.kind === 'job' && item.job.state).toBe('stopped');
    expect(item.kind === 'job' && item.job.last_lines).toEqual(['epoch 1', 'epoch 2']);
  });

  it('shows a warning when a budget ends the run, nothing while within it', () => {
    const meter = {
      run_spent: { tool_calls: 1 },
      run_limits: { max_tool_calls: 2 },
      session_spent: { tool_calls: 1 },
      session_limits: {}
    };
    const t = Transcript.from([
      started(),
      ...events([
        { type: 'budget', ...meter },
        { type: 'budget', ...meter, reached: 'run budget of 2 tool calls reached (2)' }
      ])
    ]);
    expect(kinds(t.items)).toEqual(['user', 'notice']);
    expect(t.items[1]).toMatchObject({
      level: 'warning',
      text: 'Budget reached: run budget of 2 tool calls reached (2). Ending with a summary.'
    });
  });
});

describe('questions an MCP server asks, and its progress', () => {
  it('keeps the kind, the link and the form of a relayed question', () => {
    const transcript = new Transcript();
    transcript.apply(started());
    const question: AgentEvent = {
      type: 'permission.request',
      request_id: 'q-1',
      tool: "MCP server 'ev'",
      title: "MCP server 'ev' asks",
      message: 'Your name?',
      kind: 'elicitation',
      fields: { type: 'object', properties: { name: { type: 'string' } } }
    };
    for (const message of events([question])) {
      transcript.apply(message);
    }
    const item = transcript.items.find(i => i.kind === 'permission');
    expect(item?.kind === 'permission' && item.questionKind).toBe('elicitation');
    expect(item?.kind === 'permission' && item.fields).toEqual({
      type: 'object',
      properties: { name: { type: 'string' } }
    });
    expect(item?.kind === 'permission' && item.url).toBeNull();
  });

  it('shows the latest progress line on the running tool card', () => {
    const transcript = new Transcript();
    transcript.apply(started());
    const list: AgentEvent[] = [
      { type: 'tool_call', tool: 'ev__slow', tool_call_id: 'c1', args: {} },
      {
        type: 'tool.progress',
        tool_call_id: 'c1',
        progress: 2,
        total: 5,
        message: 'step 2'
      },
      { type: 'tool.progress', tool_call_id: 'c1', message: 'did it', level: 'info' }
    ];
    const seen: (string | null)[] = [];
    for (const message of events(list)) {
      transcript.apply(message);
      const tool = transcript.items.find(i => i.kind === 'tool') as ToolItem | undefined;
      seen.push(tool?.progress ?? null);
    }
    expect(seen).toEqual([null, '2/5 step 2', '[info] did it']);
  });
});
