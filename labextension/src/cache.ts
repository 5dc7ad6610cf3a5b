/**
 * The cache browser: the kernel's tool-output cache, like the in-notebook browser — entries,
 * page through an output, grep it, and see its images. Everything is fetched on demand from the
 * kernel (`cache.list`, `cache.read`, `cache.grep`, `cache.parts`; see `CodeliaConnection.read`).
 */

import { CodeliaConnection } from './connection';
import { button, el, formatBytes } from './dom';
import { CacheEntry, ContentPart } from './protocol';
import type { CacheTextResult } from './wire';

export const CACHE_PAGE_LINES = 200;

export class CacheBrowser {
  readonly node: HTMLElement;
  private readonly list: HTMLElement;
  private readonly viewer: HTMLElement;
  private readonly output: HTMLElement;
  private readonly pageLabel: HTMLElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private readonly pattern: HTMLInputElement;
  private readonly regex: HTMLInputElement;
  private readonly images: HTMLElement;
  private entries: CacheEntry[] = [];
  private current: CacheEntry | null = null;
  private offset = 0;

  constructor(private readonly connection: () => CodeliaConnection | null) {
    this.node = el('div', 'jp-codelia-cache');
    const toolbar = el('div', 'jp-codelia-toolbar');
    toolbar.append(
      el('span', 'jp-codelia-section-title', 'Tool-output cache'),
      button('Refresh', 'jp-codelia-cache-refresh', () => void this.refresh())
    );
    this.list = el('div', 'jp-codelia-cache-list');
    this.list.setAttribute('role', 'listbox');
    this.viewer = el('div', 'jp-codelia-cache-viewer');
    this.viewer.hidden = true;
    const controls = el('div', 'jp-codelia-toolbar');
    this.prev = button('◀ Prev', 'jp-codelia-cache-prev', () => void this.page(-1));
    this.next = button('Next ▶', 'jp-codelia-cache-next', () => void this.page(1));
    this.pageLabel = el('span', 'jp-codelia-cache-page');
    this.pattern = el('input', 'jp-codelia-cache-pattern');
    this.pattern.placeholder = 'grep…';
    this.pattern.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        void this.grep();
      }
    });
    this.regex = el('input');
    this.regex.type = 'checkbox';
    this.regex.title = 'Treat the pattern as a regular expression';
    const regexLabel = el('label', 'jp-codelia-cache-regex');
    regexLabel.append(this.regex, document.createTextNode(' regex'));
    controls.append(
      this.prev,
      this.pageLabel,
      this.next,
      this.pattern,
      regexLabel,
      button('Grep', 'jp-codelia-cache-grep', () => void this.grep())
    );
    this.output = el('pre', 'jp-codelia-cache-output');
    this.images = el('div', 'jp-codelia-cache-images');
    this.viewer.append(controls, this.images, this.output);
    this.node.append(toolbar, this.list, this.viewer);
  }

  async refresh(): Promise<void> {
    const connection = this.connection();
    this.list.textContent = '';
    if (!connection) {
      this.list.textContent = 'Open a notebook to browse its kernel’s cache.';
      return;
    }
    try {
      const result = await connection.read('cache.list');
      this.entries = result.entries;
    } catch (error) {
      this.list.appendChild(
        el('div', 'jp-mod-error', `Could not list the cache: ${error}`)
      );
      return;
    }
    if (this.entries.length === 0) {
      this.list.textContent = 'No cached tool outputs yet.';
    }
    for (const entry of this.entries) {
      // One cell per column so the CSS grid lines the columns up across rows.
      const row = button(
        '',
        'jp-codelia-cache-entry' + (entry.is_error ? ' jp-mod-error' : ''),
        () => void this.open(entry.ref_id)
      );
      row.append(
        el('span', 'jp-codelia-cache-ref', entry.ref_id),
        el('span', 'jp-codelia-cache-tool', entry.tool_name),
        el('span', 'jp-codelia-cache-lines', `${entry.line_count} lines`),
        el('span', 'jp-codelia-cache-size', formatBytes(entry.size_bytes)),
        el('span', 'jp-codelia-cache-whose', entry.whose ?? '')
      );
      row.setAttribute('role', 'option');
      row.title = [
        entry.ref_id,
        entry.tool_name,
        `${entry.line_count} lines`,
        formatBytes(entry.size_bytes),
        entry.whose ?? ''
      ]
        .filter(part => part !== '')
        .join(' · ');
      row.dataset.refId = entry.ref_id;
      this.list.appendChild(row);
    }
  }

  /** Show one entry (also used by the "Open in the cache browser" link of a tool card). */
  async open(refId: string): Promise<void> {
    if (!this.entries.some(entry => entry.ref_id === refId)) {
      await this.refresh();
    }
    const entry = this.entries.find(candidate => candidate.ref_id === refId);
    if (!entry) {
      this.viewer.hidden = false;
      this.output.textContent = `No cache entry ${refId} in this kernel.`;
      return;
    }
    this.current = entry;
    this.offset = 0;
    this.viewer.hidden = false;
    for (const row of Array.from(this.list.children) as HTMLElement[]) {
      row.classList.toggle('jp-mod-selected', row.dataset.refId === refId);
    }
    this.images.textContent = '';
    if (entry.has_parts) {
      void this.loadImages(entry.ref_id);
    }
    await this.read();
  }

  private async page(direction: number): Promise<void> {
    if (!this.current) {
      return;
    }
    const offset = this.offset + direction * CACHE_PAGE_LINES;
    if (offset < 0 || offset >= Math.max(1, this.current.line_count)) {
      return;
    }
    this.offset = offset;
    await this.read();
  }

  private async read(): Promise<void> {
    const entry = this.current;
    const connection = this.connection();
    if (!entry || !connection) {
      return;
    }
    const last = Math.min(entry.line_count, this.offset + CACHE_PAGE_LINES);
    this.pageLabel.textContent = `lines ${this.offset + 1}–${last} of ${entry.line_count}`;
    this.prev.disabled = this.offset === 0;
    this.next.disabled = last >= entry.line_count;
    await this.show(
      connection.read('cache.read', {
        ref_id: entry.ref_id,
        offset: this.offset,
        limit: CACHE_PAGE_LINES
      })
    );
  }

  private async grep(): Promise<void> {
    const entry = this.current;
    const connection = this.connection();
    const pattern = this.pattern.value;
    if (!entry || !connection) {
      return;
    }
    if (pattern === '') {
      await this.read();
      return;
    }
    this.pageLabel.textContent = `matches of ${JSON.stringify(pattern)}`;
    await this.show(
      connection.read('cache.grep', {
        ref_id: entry.ref_id,
        pattern,
        regex: this.regex.checked
      })
    );
  }

  private async show(request: Promise<CacheTextResult>): Promise<void> {
    try {
      const result = await request;
      this.output.classList.remove('jp-mod-error');
      this.output.textContent = result.text;
    } catch (error) {
      this.output.classList.add('jp-mod-error');
      this.output.textContent = String(error instanceof Error ? error.message : error);
    }
  }

  private async loadImages(refId: string): Promise<void> {
    const connection = this.connection();
    if (!connection) {
      return;
    }
    try {
      const result = await connection.read('cache.parts', { ref_id: refId });
      for (const part of result.parts as ContentPart[]) {
        const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
        if (
          part.type === 'image_url' &&
          typeof url === 'string' &&
          url.startsWith('data:image/')
        ) {
          const img = el('img', 'jp-codelia-image');
          img.src = url;
          img.alt = `image in ${refId}`;
          this.images.appendChild(img);
        }
      }
    } catch (error) {
      this.images.appendChild(
        el('div', 'jp-mod-error', `Could not load images: ${error}`)
      );
    }
  }
}
