/** Small DOM helpers shared by the panel's views (no framework: plain nodes, CSS classes). */

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function button(
  label: string,
  className: string,
  onClick: () => void,
  title?: string
): HTMLButtonElement {
  const node = el('button', `jp-Button jp-mod-styled ${className}`, label);
  node.type = 'button';
  if (title) {
    node.title = title;
  }
  node.addEventListener('click', onClick);
  return node;
}

let disclosureCount = 0;

/**
 * A section that opens and closes: a header button (`aria-expanded`) over a body hidden while
 * closed. The transcript uses it instead of `<details>`: Chromium gives every `<details>` a
 * user-agent shadow tree, and inserting one costs about half a millisecond of style work that
 * grows with how many the page already holds, so in a transcript of thousands of tool cards
 * every new event got slower (bench/sidepanel.py).
 */
export class Disclosure {
  readonly node: HTMLElement;
  readonly header: HTMLButtonElement;
  readonly body: HTMLElement;

  /** @param onToggle - called after the section opened or closed (by a click or `open`). */
  constructor(
    className: string,
    private readonly onToggle?: (open: boolean) => void
  ) {
    disclosureCount += 1;
    this.node = el('div', `jp-codelia-disclosure ${className}`);
    this.header = el('button', 'jp-codelia-disclosure-header');
    this.header.type = 'button';
    this.header.setAttribute('aria-expanded', 'false');
    this.body = el('div', 'jp-codelia-disclosure-body');
    this.body.id = `jp-codelia-disclosure-${disclosureCount}`;
    this.body.hidden = true;
    this.header.setAttribute('aria-controls', this.body.id);
    this.header.addEventListener('click', () => {
      this.open = !this.open;
    });
    this.node.append(this.header, this.body);
  }

  get open(): boolean {
    return !this.body.hidden;
  }

  set open(value: boolean) {
    if (value === this.open) {
      return;
    }
    this.body.hidden = !value;
    this.header.setAttribute('aria-expanded', String(value));
    this.onToggle?.(value);
  }
}

/** A unified diff as coloured lines (added, removed, hunk headers, file headers). */
export function renderDiff(diff: string): HTMLElement {
  const pre = el('pre', 'jp-codelia-diff');
  for (const line of diff.split('\n')) {
    let kind = 'context';
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ')) {
      kind = 'file';
    } else if (line.startsWith('@@')) {
      kind = 'hunk';
    } else if (line.startsWith('+')) {
      kind = 'added';
    } else if (line.startsWith('-')) {
      kind = 'removed';
    }
    pre.appendChild(
      el('span', `jp-codelia-diff-line jp-codelia-diff-${kind}`, line + '\n')
    );
  }
  return pre;
}

export function formatTokens(count: number): string {
  if (count >= 1_000_000) {
    return `${(count / 1_000_000).toFixed(2)}M`;
  }
  if (count >= 10_000) {
    return `${Math.round(count / 1000)}k`;
  }
  if (count >= 1000) {
    return `${(count / 1000).toFixed(1)}k`;
  }
  return String(count);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) {
    return `${ms} ms`;
  }
  if (ms < 60_000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) {
    return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  }
  if (bytes >= 1024) {
    return `${(bytes / 1024).toFixed(1)} KB`;
  }
  return `${bytes} B`;
}
