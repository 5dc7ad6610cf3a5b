import { describe, expect, it } from 'vitest';

import { IopubView, MainShell } from '../src/mainshell';

function status(
  state: string,
  parentId: string,
  parentType = 'execute_request',
  subshell = false
): IopubView {
  return { type: 'status', state, count: null, parentId, parentType, subshell };
}

function input(parentId: string, count: number, subshell = false): IopubView {
  return {
    type: 'execute_input',
    state: '',
    count,
    parentId,
    parentType: 'execute_request',
    subshell
  };
}

describe("the kernel's status as its main shell has it", () => {
  it('shows busy again when a subshell request ends while a cell runs', () => {
    const shell = new MainShell();
    expect(shell.observe(status('busy', 'cell'))).toBe(false);
    expect(shell.observe(status('busy', 'panel', 'comm_msg', true))).toBe(false);
    expect(shell.observe(status('idle', 'panel', 'comm_msg', true))).toBe(true);
    expect(shell.observe(status('busy', 'click', 'execute_request', true))).toBe(false);
    expect(shell.observe(status('idle', 'click', 'execute_request', true))).toBe(true);
  });

  it('shows busy again after a control request (no subshell id) ends', () => {
    const shell = new MainShell();
    shell.observe(status('busy', 'cell'));
    shell.observe(status('busy', 'make', 'create_subshell_request'));
    expect(shell.observe(status('idle', 'make', 'create_subshell_request'))).toBe(true);
  });

  it("accepts idle once the cell's own request reports it", () => {
    const shell = new MainShell();
    shell.observe(status('busy', 'cell'));
    expect(shell.observe(status('idle', 'cell'))).toBe(false);
    expect(shell.observe(status('idle', 'panel', 'comm_msg', true))).toBe(false);
  });

  it('never holds busy with no cell running, nor across a restart', () => {
    const shell = new MainShell();
    expect(shell.observe(status('idle', 'panel', 'comm_msg', true))).toBe(false);
    shell.observe(status('busy', 'cell'));
    shell.observe(status('restarting', 'x', 'shutdown_request'));
    expect(shell.observe(status('idle', 'info', 'kernel_info_request'))).toBe(false);
  });
});

describe('the In [n] of a cell that ran on the main shell', () => {
  it('is the number of its execute_input, not of a subshell cell run meanwhile', () => {
    const shell = new MainShell();
    shell.observe(input('codelia-cell', 2));
    shell.observe(input('agent-cell', 3, true));
    expect(shell.takeCount('agent-cell')).toBeNull();
    expect(shell.takeCount('codelia-cell')).toBe(2);
    expect(shell.takeCount('codelia-cell')).toBeNull(); // used once
  });

  it('keeps a bounded number of them', () => {
    const shell = new MainShell();
    for (let i = 0; i < 200; i++) {
      shell.observe(input(`cell${i}`, i));
    }
    expect(shell.takeCount('cell0')).toBeNull();
    expect(shell.takeCount('cell199')).toBe(199);
  });
});
