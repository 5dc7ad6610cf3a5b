/**
 * Ordering a history replay before the live stream.
 *
 * A side panel that connects while a run is going asks the kernel for the session's transcript and
 * receives live events at the same time. Events are numbered once, by the agent, so the transcript
 * model drops anything it has already applied; but it can only do that when the older events come
 * first. The gate holds live messages while a replay loads and delivers them after it. A panel
 * holds them from the moment it starts connecting (`hold`), so not even the first live event can
 * overtake the replay that follows the hello.
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
   * Hold live messages until the returned function is called (once is enough; later calls do
   * nothing). A replay started meanwhile does not end the hold; the last release delivers
   * what arrived meanwhile, in order.
   */
  hold(): () => void {
    this.held ??= [];
    this.holds += 1;
    let released = false;
    return () => {
      if (released) {
        return;
      }
      released = true;
      this.holds -= 1;
      if (this.holds === 0) {
        this.flush();
      }
    };
  }

  /**
   * Deliver what `load` returns, then every live message that arrived meanwhile. A replay that
   * starts while another is loading (or under a `hold`) delivers its own messages and leaves the
   * held ones to the outer one, which delivers them when it ends.
   */
  async replay(load: () => Promise<T[]>): Promise<void> {
    const release = this.hold();
    try {
      for (const message of await load()) {
        this.deliver(message);
      }
    } finally {
      release();
    }
  }

  private flush(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const message of held) {
      this.deliver(message);
    }
  }

  private held: T[] | null = null;
  private holds = 0;
}
