// transformers' clean_up_tokenization_spaces: after decoding, drop the space before
// punctuation and English contractions ("Hello ." -> "Hello.", "do n't" -> "don't"). Applied
// in this order, each over the whole text, so one rule can expose a match for a later one.
const RULES: readonly (readonly [string, string])[] = [
  [' .', '.'],
  [' ?', '?'],
  [' !', '!'],
  [' ,', ','],
  [" ' ", "'"],
  [" n't", "n't"],
  [" 'm", "'m"],
  [" 's", "'s"],
  [" 've", "'ve"],
  [" 're", "'re"],
];

export function cleanUpSpaces(text: string): string {
  for (const [from, to] of RULES) text = text.replaceAll(from, to);
  return text;
}

/**
 * The same cleanup over text that arrives in pieces. Every rule starts with a space and is at
 * most 4 characters long, and the rules only ever delete spaces, so a cut with no space among
 * the 3 characters before it splits the text into halves that clean up independently (no match,
 * in any round, can straddle it). Text after the last such cut is held back until more arrives
 * or end() is called.
 */
export class StreamingCleanup {
  private pending = '';
  /** the last (up to) 3 characters already let through, raw */
  private tail = '';

  push(piece: string): string {
    this.pending += piece;
    const s = this.tail + this.pending;
    let cut = s.length;
    while (cut > this.tail.length && s.slice(Math.max(0, cut - 3), cut).includes(' ')) cut--;
    const ready = s.slice(this.tail.length, cut);
    if (!ready) return '';
    this.tail = s.slice(Math.max(0, cut - 3), cut);
    this.pending = s.slice(cut);
    return cleanUpSpaces(ready);
  }

  end(): string {
    const rest = cleanUpSpaces(this.pending);
    this.pending = '';
    this.tail = '';
    return rest;
  }
}
