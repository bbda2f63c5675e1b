// Incremental detokenizing for streamed generation. Decoding one id at a time is wrong in two
// ways: a multi-byte UTF-8 character can be split over ids (each half decodes to U+FFFD), and
// decoders look at neighbours (SentencePiece-style decoders drop the leading space of the first
// token only). So each step decodes a small window: the ids of the previous emitted piece (for
// context) plus those not yet emitted, and emits what the window's text adds beyond the
// context's text, once that text no longer ends in U+FFFD (an unfinished character).
// With clean_up_tokenization_spaces on, the pieces then go through StreamingCleanup, which
// holds back the little text a later piece could still change.
import { StreamingCleanup } from './cleanup.ts';

export interface TextStreamer {
  /** the newly completed text after this id ('' while a character or a cleanup is unfinished) */
  push(id: number): string;
  /** whatever is still held back; the streamer starts afresh afterwards */
  flush(): string;
}

/** `decodeRaw` decodes ids (never empty) without the space cleanup; `cleanup` applies it on top. */
export function createStreamer(decodeRaw: (ids: number[]) => string, cleanup: boolean): TextStreamer {
  let ids: number[] = [];
  let prefixEnd = 0; // ids[0, prefixEnd) were emitted last time: context only
  const clean = cleanup ? new StreamingCleanup() : null;
  const text = (from: number, to?: number): string => (to === from ? '' : decodeRaw(ids.slice(from, to)));

  /** the text the ids after prefixEnd add, or null while it is not complete */
  const newText = (final: boolean): string | null => {
    const prefix = text(0, prefixEnd);
    const full = text(0);
    // a decoder whose text for the window does not extend its text for the context cannot be
    // split here; wait (and at the end, give what follows the common part)
    if (!final && (full.length <= prefix.length || full.endsWith('\uFFFD') || !full.startsWith(prefix))) return null;
    let common = 0;
    while (common < prefix.length && common < full.length && prefix[common] === full[common]) common++;
    return full.slice(common);
  };
  const out = (piece: string): string => (clean ? clean.push(piece) : piece);

  return {
    push(id: number): string {
      ids.push(id);
      const piece = newText(false);
      if (piece === null) return '';
      // the ids just emitted become the next window's context
      ids = ids.slice(prefixEnd);
      prefixEnd = ids.length;
      return out(piece);
    },
    flush(): string {
      const piece = ids.length > prefixEnd ? (newText(true) ?? '') : '';
      ids = [];
      prefixEnd = 0;
      return clean ? clean.push(piece) + clean.end() : piece;
    },
  };
}
