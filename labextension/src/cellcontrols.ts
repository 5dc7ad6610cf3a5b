/**
 * The buttons of a blocking `%%codelia` cell's own panel: Stop, and Allow / Always allow / Deny
 * on each approval. The running cell holds the kernel's main shell, so an ipywidgets click would
 * reach the kernel only after the run; the kernel draws these buttons as HTML naming the run and
 * the approval (`data-codelia-run`, `data-codelia-approval`, `data-codelia-action`, see
 * notebook/ui/panel.py). This module catches the click and sends a `cell.control` request through
 * `bridge.control()` on a kernel subshell, the path the side panel's Stop takes. The stylesheet
 * reveals the buttons; where this extension is not loaded they stay hidden and the panel says to
 * answer at the input prompt.
 *
 * An approval answered here also answers the cell's own input prompt for it (with the same
 * letter), so no input box is left waiting in the cell: the kernel has stopped reading it and
 * drops that late reply.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { IDisposable } from '@lumino/disposable';

import { executeControl, openControlSubshell } from './connection';
import { JSONObject } from './protocol';
import { CellControl } from './wire';

type Action = CellControl['action'];

/** Every action a button may carry: a record of the generated type, so the two cannot differ. */
const ACTIONS: { [action in Action]: true } = {
  allow: true,
  allow_remember: true,
  deny: true,
  stop: true
};

function isAction(value: string): value is Action {
  return Object.prototype.hasOwnProperty.call(ACTIONS, value);
}
/** What the input prompt takes for each answer (runner.parse_answer). */
const PROMPT_ANSWERS: { [action in Exclude<Action, 'stop'>]: string } = {
  allow: 'y',
  allow_remember: 'a',
  deny: 'n'
};
/** The kernel's approval prompts begin so (a person's own `input()` is never answered). */
const PROMPT_PREFIX = 'codelia:';

export const NO_SUBSHELL =
  'This kernel cannot take a click while the cell runs (it has no subshells): answer at ' +
  'the input prompt, or stop the run with the kernel interrupt (■).';

/** The request a click on `target` sends, and the controls it belongs to; null for others. */
export function controlRequest(
  target: Element,
  requestId: string = UUID.uuid4()
): { request: CellControl; controls: HTMLElement } | null {
  const button = target.closest('[data-codelia-action]');
  const controls = button?.closest<HTMLElement>(
    '.codelia-cell-controls[data-codelia-run]'
  );
  const action = button?.getAttribute('data-codelia-action') ?? '';
  const runId = controls?.dataset.codeliaRun;
  if (!controls || !runId || !isAction(action)) {
    return null;
  }
  const request: CellControl = {
    type: 'cell.control',
    request_id: requestId,
    run_id: runId,
    action
  };
  const approval = controls.dataset.codeliaApproval;
  if (approval) {
    request.permission_request_id = approval;
  }
  const reason = controls
    .querySelector<HTMLInputElement>('[data-codelia-reason]')
    ?.value.trim();
  if (reason) {
    request.reason = reason;
  }
  return { request, controls };
}

/**
 * Answer the cell's pending codelia input prompt with `value`, as a person pressing Enter would
 * (JupyterLab's stdin box listens for that key); false when the cell shows none.
 */
export function answerPrompt(cell: Element, value: string): boolean {
  const boxes = Array.from(cell.querySelectorAll('.jp-Stdin'));
  for (const box of boxes.reverse()) {
    const prompt = box.querySelector('.jp-Stdin-prompt')?.textContent ?? '';
    const input = box.querySelector<HTMLInputElement>('input.jp-Stdin-input');
    if (input && prompt.startsWith(PROMPT_PREFIX)) {
      input.value = value;
      input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
      return true;
    }
  }
  return false;
}

/** Serves the blocking-run buttons in the outputs of one notebook. */
export class CellControls implements IDisposable {
  constructor(private readonly notebook: NotebookPanel) {
    notebook.node.addEventListener('click', this.onClick);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.notebook.node.removeEventListener('click', this.onClick);
    void this._subshell?.then(kernel => kernel?.dispose());
  }

  private readonly onClick = (event: MouseEvent): void => {
    const found = event.target instanceof Element ? controlRequest(event.target) : null;
    if (!found) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    void this.send(found.request, found.controls);
  };

  private async send(request: CellControl, controls: HTMLElement): Promise<void> {
    const buttons = Array.from(controls.querySelectorAll('button'));
    const note = controls.querySelector('.codelia-cell-note');
    const say = (text: string) => {
      if (note) {
        note.textContent = text;
      }
    };
    buttons.forEach(button => (button.disabled = true));
    say(request.action === 'stop' ? 'Stopping…' : 'Sending…');
    // Found now: once the kernel has the answer it clears these controls from the page,
    // often before the reply below arrives.
    const cell = controls.closest('.jp-Cell');
    try {
      const kernel = this.notebook.sessionContext.session?.kernel ?? null;
      const subshell = kernel ? await this.subshell(kernel) : null;
      if (!subshell) {
        throw new Error(NO_SUBSHELL);
      }
      await executeControl(subshell, request as unknown as JSONObject);
      if (request.action !== 'stop') {
        say('');
        if (cell) {
          answerPrompt(cell, PROMPT_ANSWERS[request.action]);
        }
      }
    } catch (error) {
      buttons.forEach(button => (button.disabled = false));
      say(error instanceof Error ? error.message : String(error));
    }
  }

  /** A subshell of the notebook's kernel (made on the first click, again after a change). */
  private subshell(
    kernel: Kernel.IKernelConnection
  ): Promise<Kernel.IKernelConnection | null> {
    if (this._subshell === null || this._subshellFor !== kernel) {
      this._subshellFor = kernel;
      this._subshell = openControlSubshell(kernel);
    }
    return this._subshell;
  }

  private _disposed = false;
  private _subshell: Promise<Kernel.IKernelConnection | null> | null = null;
  private _subshellFor: Kernel.IKernelConnection | null = null;
}
