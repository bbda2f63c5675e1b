// A completion's text as its tokens arrive, with OpenAI's stop strings: the text ends before the
// first place a stop string starts, wherever the token boundaries fall (a stop string can begin
// in one token and end in another). Text that could still turn out to begin a stop string is
// held back until the next token decides it, so nothing past a stop is ever streamed.
import type { TextStreamer } from '../text/tokenizer.ts';

export class TextOutput {
  /** text decoded but not yet handed out (it may begin a stop string) */
  private pending = '';
  private ended = false;
  private readonly longest: number;

  constructor(
    private readonly streamer: TextStreamer,
    private readonly stops: readonly string[],
  ) {
    this.longest = Math.max(0, ...stops.map((s) => s.length));
  }

  /** the text this id makes safe to hand out, and whether a stop string was reached */
  push(id: number): { text: string; stopped: boolean } {
    if (this.ended) return { text: '', stopped: true };
    this.pending += this.streamer.push(id);
    return this.take(false);
  }

  /** the text held back at the end of generation (a stop string may still show in it) */
  end(): { text: string; stopped: boolean } {
    if (this.ended) return { text: '', stopped: true };
    this.pending += this.streamer.flush();
    return this.take(true);
  }

  private take(final: boolean): { text: string; stopped: boolean } {
    let cut = -1;
    for (const s of this.stops) {
      const at = this.pending.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      const text = this.pending.slice(0, cut);
      this.pending = '';
      this.ended = true;
      return { text, stopped: true };
    }
    if (final) {
      const text = this.pending;
      this.pending = '';
      this.ended = true;
      return { text, stopped: false };
    }
    // hold back the longest tail that is the beginning of a stop string
    let hold = 0;
    for (let n = Math.min(this.longest - 1, this.pending.length); n > 0; n--) {
      const tail = this.pending.slice(this.pending.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) {
        hold = n;
        break;
      }
    }
    const text = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return { text, stopped: false };
  }
}
