/**
 * Ordering a history replay before the live stream.
 *
 * A side panel that connects while a run is going asks the kernel for the session's transcript and
 * receives live events at the same time. Events are numbered once, by the agent, so the transcript
 * model drops anything it has already applied; but it can only do that when the older events come
 * first. The gate holds live messages while a replay loads and delivers them after it.
 */
export class ReplayGate<T> {
  constructor(private readonly deliver: (message: T) => void) {}

  /** Deliver a live message now, or after the replay in progress. */
  push(message: T): void {
    if (this.held) {
      this.held.push(message);
    } else {
      this.deliver(message);
    }
  }

  /**
   * Deliver what `load` returns, then every live message that arrived meanwhile. A replay that
   * starts while another is loading delivers its own messages and leaves the held ones to the
   * first, which delivers them when it ends.
   */
  async replay(load: () => Promise<T[]>): Promise<void> {
    const outer = this.held === null;
    const held: T[] = this.held ?? [];
    this.held = held;
    try {
      for (const message of await load()) {
        this.deliver(message);
      }
    } finally {
      if (outer) {
        this.held = null;
        for (const message of held) {
          this.deliver(message);
        }
      }
    }
  }

  private held: T[] | null = null;
}
